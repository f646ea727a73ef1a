import {
  insertOutboxRows,
  requestFingerprint,
  type OutboxRowInput,
} from '../../lib/outbox/postgres/postgres.insert.js';
import type { PostgresExecutor } from '../../lib/outbox/postgres/postgres.executor.js';
import type { OutboxSchema } from '../../lib/outbox/postgres/postgres.schema.js';

/** A message row as phase 2's `enqueueIn` will hand it over: checked, with its id, owner and fingerprint. */
export function messageRow(
  key: string,
  options: { owner?: string; orderKey?: string; path?: string; body?: unknown } = {},
): OutboxRowInput {
  const owner = options.owner ?? 'default';
  const message = { method: 'POST', path: options.path ?? '/api/messages', body: options.body ?? { key } };
  return {
    id: `${owner}.${key}`,
    owner,
    ...(options.orderKey !== undefined && { orderKey: options.orderKey }),
    message: { ...message, idempotencyKey: key },
    fingerprint: requestFingerprint(message),
  };
}

/** The ids of the outbox's messages, in sequence order. */
export async function storedIds(executor: PostgresExecutor, schema: OutboxSchema): Promise<string[]> {
  const rows = await executor.query(`SELECT id FROM ${schema.table('messages')} ORDER BY seq`, []);
  return rows.map((row) => String(row.id));
}

/** Commits `rows` in a transaction of the outbox's executor, at `now`. */
export async function commitRows(
  executor: PostgresExecutor,
  schema: OutboxSchema,
  rows: readonly OutboxRowInput[],
  now: number,
): Promise<void> {
  await executor.transaction(async (session) => {
    // The executor's own transaction hands out a session, which stands in for the application's handle.
    const inSession = { ...executor, notATransaction: () => undefined, sessionOf: () => session };
    await insertOutboxRows(inSession, session, schema, rows, { now });
  });
}
