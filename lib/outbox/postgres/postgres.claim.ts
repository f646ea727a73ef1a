import type { SqlRow, SqlSession } from './postgres.executor.js';
import type { OutboxSchema } from './postgres.schema.js';

/** A message the relay holds a lease on, as its sink gets it. */
export interface ClaimedRow {
  /** Its place in the table: for one owner and order key, the order of the commits. */
  readonly seq: string;
  readonly id: string;
  readonly owner: string;
  readonly orderKey?: string;
  /** What `enqueueIn` stored, parsed. */
  readonly message: unknown;
  /** Claims of the row so far, this one included: 1 on its first. */
  readonly attempts: number;
  readonly enqueuedAt: number;
}

/** The relay's hold on the rows of one claim: every later write checks both. */
interface Lease {
  readonly owner: string;
  readonly epoch: string;
}

export interface Claim {
  readonly lease: Lease;
  /** In the order the sink should get them: each owner's first due rows, then their next ones. */
  readonly rows: readonly ClaimedRow[];
  /** The owner the walk of the next claim starts after. */
  readonly lastOwner?: string;
}

/** What becomes of a claimed row: removed (sent, or dead-lettered with a reason), or due again later. */
export type Settlement =
  | { readonly seq: string; readonly outcome: 'done' }
  | { readonly seq: string; readonly outcome: 'retry'; readonly retryAt: number; readonly reason: string }
  | { readonly seq: string; readonly outcome: 'dead'; readonly reason: string };

/**
 * Claims up to `limit` due rows in one statement. It walks the owners that have rows from the one after `after`
 * (wrapping round, at most `limit` of them), takes each one's due rows in order, and keeps the first of every owner
 * before the second of any: a backlog of one owner delays another's next message by one claim at most. A row of an
 * order key is due only when no lower row of its owner and key is left (sent rows are deleted), so one row per key
 * is in flight. The rows are locked with SKIP LOCKED and checked again once locked, so two relays never claim one
 * row; the claim gives them a lease: this relay as owner, a new epoch, and `available_at` moved to the lease's end,
 * after which another relay may claim them.
 */
function claimStatement(schema: OutboxSchema): string {
  const messages = schema.table('messages');
  const nextOwner = (after: string): string =>
    `coalesce((SELECT min(owner) FROM ${messages} WHERE owner > ${after}), (SELECT min(owner) FROM ${messages}))`;
  return `
WITH RECURSIVE walk(owner, place, first) AS (
  SELECT f.owner, 1, f.owner FROM (SELECT ${nextOwner('$5::text')} AS owner) f
  UNION ALL
  SELECT n.owner, w.place + 1, w.first
  FROM walk w CROSS JOIN LATERAL (SELECT ${nextOwner('w.owner')} AS owner) n
  WHERE w.place < $4::integer AND n.owner <> w.first
), candidates AS (
  SELECT c.seq, w.place, row_number() OVER (PARTITION BY w.owner ORDER BY c.available_at, c.seq) AS turn
  FROM walk w CROSS JOIN LATERAL (
    SELECT m.seq, m.available_at FROM ${messages} m
    WHERE m.owner = w.owner AND m.available_at <= $1::bigint
      AND (m.order_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM ${messages} p WHERE p.owner = m.owner AND p.order_key = m.order_key AND p.seq < m.seq))
    ORDER BY m.available_at, m.seq
    LIMIT $4::integer
  ) c
), chosen AS (
  SELECT m.seq, c.place, c.turn
  FROM ${messages} m JOIN (SELECT * FROM candidates ORDER BY turn, place LIMIT $4::integer) c ON c.seq = m.seq
  WHERE m.available_at <= $1::bigint
  FOR UPDATE OF m SKIP LOCKED
), lease AS (
  SELECT nextval('${schema.table('lease_epochs')}') AS epoch
)
UPDATE ${messages} m
SET lease_owner = $3::text, lease_epoch = lease.epoch, available_at = $2::bigint, attempts = m.attempts + 1
FROM chosen, lease
WHERE m.seq = chosen.seq AND m.available_at <= $1::bigint
RETURNING m.seq::text AS seq, m.id, m.owner, m.order_key, m.message::text AS message, m.attempts,
  m.enqueued_at::float8 AS enqueued_at, lease.epoch::text AS epoch, chosen.place, chosen.turn`;
}

/** A message's columns as the relay and the dead-letter list read them (message as text, times as float8). */
export function messageFields(row: SqlRow): Omit<ClaimedRow, 'seq'> {
  return {
    id: String(row.id),
    owner: String(row.owner),
    ...(row.order_key != null && { orderKey: row.order_key as string }),
    message: JSON.parse(String(row.message)) as unknown,
    attempts: Number(row.attempts),
    enqueuedAt: Number(row.enqueued_at),
  };
}

export async function claimRows(
  session: SqlSession,
  schema: OutboxSchema,
  request: {
    readonly relay: string;
    readonly now: number;
    readonly leaseMs: number;
    readonly limit: number;
    readonly after?: string;
  },
): Promise<Claim | undefined> {
  const result = await session.query(claimStatement(schema), [
    String(request.now),
    String(request.now + request.leaseMs),
    request.relay,
    String(request.limit),
    request.after ?? '',
  ]);
  if (result.length === 0) return undefined;
  const ordered = [...result].sort(
    (a, b) => Number(a.turn) - Number(b.turn) || Number(a.place) - Number(b.place) || Number(a.seq) - Number(b.seq),
  );
  const last = result.reduce((furthest, row) => (Number(row.place) > Number(furthest.place) ? row : furthest));
  return {
    lease: { owner: request.relay, epoch: String(result[0].epoch) },
    rows: ordered.map((row) => ({ seq: String(row.seq), ...messageFields(row) })),
    lastOwner: String(last.owner),
  };
}

/** Moves the lease's end of `seqs` to `until`, for the rows this lease still holds; returns those. */
export async function renewLease(
  session: SqlSession,
  schema: OutboxSchema,
  lease: Lease,
  seqs: readonly string[],
  until: number,
): Promise<Set<string>> {
  const result = await session.query(
    `UPDATE ${schema.table('messages')} SET available_at = $4::bigint
     WHERE seq IN (SELECT jsonb_array_elements_text($1::jsonb)::bigint) AND lease_owner = $2::text AND lease_epoch = $3::bigint
     RETURNING seq::text AS seq`,
    [JSON.stringify(seqs), lease.owner, lease.epoch, String(until)],
  );
  return new Set(result.map((row) => String(row.seq)));
}

/**
 * Settles rows of one lease in one statement: deletes the sent ones, moves the dead ones to the dead letters, makes
 * the retried ones due at their time with the lease cleared. Each write checks the lease (owner and epoch) on the
 * row as it is when written: a row another relay claimed after this lease ran out is left to it. Returns the rows
 * settled; the others were no longer this lease's.
 */
export async function settleRows(
  session: SqlSession,
  schema: OutboxSchema,
  lease: Lease,
  settlements: readonly Settlement[],
  now: number,
): Promise<Set<string>> {
  const messages = schema.table('messages');
  const outcomes = settlements.map((settlement) => ({
    seq: settlement.seq,
    outcome: settlement.outcome,
    retry_at: settlement.outcome === 'retry' ? settlement.retryAt : null,
    reason: settlement.outcome === 'done' ? null : settlement.reason,
  }));
  const result = await session.query(
    `
WITH outcome AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS o(seq bigint, outcome text, retry_at bigint, reason text)
), removed AS (
  DELETE FROM ${messages} m USING outcome o
  WHERE m.seq = o.seq AND o.outcome IN ('done', 'dead') AND m.lease_owner = $2::text AND m.lease_epoch = $3::bigint
  RETURNING m.*, o.outcome, o.reason
), buried AS (
  INSERT INTO ${schema.table('dead_letters')}
    (id, owner, order_key, message, fingerprint, enqueued_at, attempts, reason, failed_at)
  SELECT id, owner, order_key, message, fingerprint, enqueued_at, attempts, reason, $4::bigint
  FROM removed WHERE outcome = 'dead'
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), retried AS (
  UPDATE ${messages} m
  SET available_at = o.retry_at, lease_owner = NULL, lease_epoch = NULL, last_error = o.reason
  FROM outcome o
  WHERE m.seq = o.seq AND o.outcome = 'retry' AND m.lease_owner = $2::text AND m.lease_epoch = $3::bigint
  RETURNING m.seq
)
SELECT seq::text AS seq FROM removed UNION ALL SELECT seq::text FROM retried`,
    [JSON.stringify(outcomes), lease.owner, lease.epoch, String(now)],
  );
  return new Set(result.map((row) => String(row.seq)));
}
