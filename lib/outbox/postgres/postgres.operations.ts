import { messageFields, type ClaimedRow } from './postgres.claim.js';
import type { PostgresExecutor } from './postgres.executor.js';
import type { OutboxSchema } from './postgres.schema.js';

/** The outbox's rows by state, at one moment. */
interface PostgresOutboxCounts {
  /** Due now, no relay holding them (or a relay's lease ran out). */
  readonly waiting: number;
  /** In a retry's back-off. */
  readonly delayed: number;
  /** Claimed by a relay whose lease runs. */
  readonly active: number;
  readonly deadLettered: number;
  /** Age of the oldest message not yet sent, ms on the given clock; 0 when there is none. */
  readonly oldestAgeMs: number;
}

/** A message given up on, as the dead letters hold it: its claims, why it was given up on and when. */
interface PostgresDeadLetter extends Omit<ClaimedRow, 'seq'> {
  readonly reason: string;
  readonly failedAt: number;
}

/** The outbox's rows by state, in one statement. */
export async function countRows(
  executor: PostgresExecutor,
  schema: OutboxSchema,
  now: number,
): Promise<PostgresOutboxCounts> {
  const [row] = await executor.query(
    `SELECT
       count(*) FILTER (WHERE available_at <= $1::bigint)::integer AS waiting,
       count(*) FILTER (WHERE available_at > $1::bigint AND lease_owner IS NULL)::integer AS delayed,
       count(*) FILTER (WHERE available_at > $1::bigint AND lease_owner IS NOT NULL)::integer AS active,
       (SELECT count(*) FROM ${schema.table('dead_letters')})::integer AS dead_lettered,
       min(enqueued_at)::float8 AS oldest
     FROM ${schema.table('messages')}`,
    [String(now)],
  );
  const oldest = row.oldest == null ? undefined : Number(row.oldest);
  return {
    waiting: Number(row.waiting),
    delayed: Number(row.delayed),
    active: Number(row.active),
    deadLettered: Number(row.dead_lettered),
    oldestAgeMs: oldest === undefined ? 0 : Math.max(0, now - oldest),
  };
}

/** The dead letters, oldest failure first, at most `limit`. */
export async function listDeadLetters(
  executor: PostgresExecutor,
  schema: OutboxSchema,
  limit: number,
): Promise<PostgresDeadLetter[]> {
  const rows = await executor.query(
    `SELECT id, owner, order_key, message::text AS message, attempts, reason,
       enqueued_at::float8 AS enqueued_at, failed_at::float8 AS failed_at
     FROM ${schema.table('dead_letters')} ORDER BY failed_at, id LIMIT $1::integer`,
    [String(limit)],
  );
  return rows.map((row) => ({ ...messageFields(row), reason: String(row.reason), failedAt: Number(row.failed_at) }));
}

/**
 * Puts a dead letter back among the messages, due at `now` with its claims counted from zero, in one statement
 * (its order key's lock taken as an insert takes it: it goes after the key's rows waiting now). Returns whether
 * there was one with that id.
 */
export async function retryDeadLetter(
  executor: PostgresExecutor,
  schema: OutboxSchema,
  id: string,
  now: number,
): Promise<boolean> {
  const messages = schema.table('messages');
  const rows = await executor.query(
    `WITH moved AS (
       DELETE FROM ${schema.table('dead_letters')} WHERE id = $1::text RETURNING *
     ), locks AS (
       SELECT ${schema.orderLock('owner', 'order_key')} FROM moved WHERE order_key IS NOT NULL
     )
     INSERT INTO ${messages} (id, owner, order_key, message, fingerprint, enqueued_at, available_at)
     SELECT id, owner, order_key, message, fingerprint, enqueued_at, $2::bigint
     FROM moved WHERE (SELECT count(*) FROM locks) >= 0
     ON CONFLICT (id) DO NOTHING
     RETURNING id`,
    [id, String(now)],
  );
  return rows.length > 0;
}
