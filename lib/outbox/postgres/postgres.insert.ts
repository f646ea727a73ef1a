import { createHash } from 'node:crypto';
import { PostgresOutboxError, PostgresOutboxKeyConflictError } from './postgres.errors.js';
import type { PostgresExecutor } from './postgres.executor.js';
import type { OutboxSchema } from './postgres.schema.js';

/** A message checked as `enqueue` checks it, ready for its row. */
export interface OutboxRowInput {
  /** The message's id, as `enqueue` computes it (its owner and its idempotency key). */
  readonly id: string;
  /** Who sends it, as an opaque name (the integration or the tenant): fairness and order are per owner. */
  readonly owner: string;
  /** Messages of one owner and order key are sent in the order their transactions committed, one at a time. */
  readonly orderKey?: string;
  /** What the row stores (JSON): the message as the relay's sink will read it, its body sealed or not. */
  readonly message: unknown;
  /** `requestFingerprint` of the request as given (before any sealing). */
  readonly fingerprint: string;
}

/** The parts of a request that decide whether a key used again is the same request. */
interface FingerprintedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

const PARTS = ['method', 'path', 'headers', 'body'] as const;

/** JSON with every object's keys sorted, so a body rebuilt in another key order hashes the same. */
function sortedJson(value: unknown): string {
  return (
    JSON.stringify(value, (_, item: unknown) =>
      typeof item === 'object' && item !== null && !Array.isArray(item)
        ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : item,
    ) ?? ''
  );
}

/**
 * A hash of each part of the request, joined by `.`: stored with the row, it tells a key used again for the same
 * request from one used for another, and which parts differ, without keeping or comparing the values.
 */
export function requestFingerprint(request: FingerprintedRequest): string {
  const headers = Object.fromEntries(
    Object.entries(request.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
  const parts = { method: request.method, path: request.path, headers, body: request.body };
  return PARTS.map((part) =>
    createHash('sha256').update(sortedJson(parts[part])).digest('base64url').slice(0, 22),
  ).join('.');
}

function differs(held: string, given: string): string[] {
  const heldParts = held.split('.');
  const givenParts = given.split('.');
  const named = PARTS.filter((_, i) => heldParts[i] !== givenParts[i]);
  // A fingerprint of another shape (written by something else than the outbox): not provably this request.
  return named.length > 0 ? named : ['stored fingerprint'];
}

/**
 * The one statement: the order keys' locks in a fixed order (so two batches cannot deadlock on each other's keys),
 * then the rows in the batch's order. An id already there (waiting, in flight or dead-lettered) is left as it is
 * and returned with the fingerprint it holds; when one holds another request's, nothing is inserted. The locks come
 * before the sequence numbers: an insert of a key waits for the transaction that holds it to end, so the key's
 * numbers follow commits.
 */
function insertStatement(schema: OutboxSchema, notify: boolean): string {
  const messages = schema.table('messages');
  const deadLetters = schema.table('dead_letters');
  return `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb)
    AS i(n integer, id text, owner text, order_key text, message jsonb, fingerprint text)
), known AS (
  SELECT i.id, coalesce(m.fingerprint, d.fingerprint) AS held, i.fingerprint AS given
  FROM input i LEFT JOIN ${messages} m ON m.id = i.id LEFT JOIN ${deadLetters} d ON d.id = i.id
), go AS (
  SELECT NOT EXISTS (SELECT 1 FROM known WHERE held <> given) AS proceed
), locks AS (
  SELECT ${schema.orderLock('k.owner', 'k.order_key')}
  FROM (SELECT DISTINCT owner, order_key FROM input, go WHERE order_key IS NOT NULL AND go.proceed
        ORDER BY owner, order_key) k
), inserted AS (
  INSERT INTO ${messages} AS m (id, owner, order_key, message, fingerprint, enqueued_at, available_at)
  SELECT i.id, i.owner, i.order_key, i.message, i.fingerprint, $2::bigint, $2::bigint
  FROM input i, go
  WHERE go.proceed AND (SELECT count(*) FROM locks) >= 0
    AND NOT EXISTS (SELECT 1 FROM ${deadLetters} d WHERE d.id = i.id)
  ORDER BY i.n
  ON CONFLICT (id) DO UPDATE SET fingerprint = m.fingerprint
  RETURNING m.id, m.fingerprint
), woken AS (
  SELECT ${notify ? `pg_notify('${schema.channel}', '')` : 'NULL'}::text AS woke
  FROM go WHERE go.proceed AND EXISTS (SELECT 1 FROM inserted)
)
SELECT k.id, coalesce(r.fingerprint, k.held) AS held, (SELECT count(*) FROM woken)::integer AS woken
FROM known k LEFT JOIN inserted r ON r.id = k.id`;
}

/** The batch with each id once: the same request twice is one row, two requests under one id a conflict. */
function distinctRows(rows: readonly OutboxRowInput[]): OutboxRowInput[] {
  const byId = new Map<string, OutboxRowInput>();
  for (const row of rows) {
    const first = byId.get(row.id);
    if (!first) byId.set(row.id, row);
    else if (first.fingerprint !== row.fingerprint)
      throw new PostgresOutboxKeyConflictError(row.id, differs(first.fingerprint, row.fingerprint));
  }
  return [...byId.values()];
}

/**
 * Stores `rows` in the caller's transaction `handle` with one statement, and returns their ids. Refuses a handle that
 * is not an open transaction, and an id already in the outbox for another request
 * (`PostgresOutboxKeyConflictError`), storing nothing of the batch. One case stores part of it: another transaction
 * committing the id while the statement runs (a concurrent retry of the same key), which the statement sees only as
 * it inserts; the caller's transaction must then roll back, as it does when its callback
 * throws. `now` is the enqueue time on the outbox's clock; with `notify`, the commit wakes the relays that LISTEN
 * (Postgres sends one notification per transaction).
 */
export async function insertOutboxRows(
  executor: PostgresExecutor,
  handle: unknown,
  schema: OutboxSchema,
  rows: readonly OutboxRowInput[],
  options: { readonly now: number; readonly notify?: boolean },
): Promise<string[]> {
  const problem = executor.notATransaction(handle);
  if (problem !== undefined) throw new PostgresOutboxError('not_in_transaction', problem);
  const batch = distinctRows(rows);
  if (batch.length === 0) return [];
  const input = batch.map((row, n) => ({
    n,
    id: row.id,
    owner: row.owner,
    order_key: row.orderKey ?? null,
    message: row.message,
    fingerprint: row.fingerprint,
  }));
  const result = await executor
    .sessionOf(handle)
    .query(insertStatement(schema, options.notify === true), [JSON.stringify(input), String(options.now)]);
  const held = new Map(result.map((row) => [row.id as string, row.held as string | null]));
  for (const row of batch) {
    const fingerprint = held.get(row.id);
    if (fingerprint != null && fingerprint !== row.fingerprint)
      throw new PostgresOutboxKeyConflictError(row.id, differs(fingerprint, row.fingerprint));
  }
  return rows.map((row) => row.id);
}
