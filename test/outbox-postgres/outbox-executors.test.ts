import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresOutboxError, PostgresOutboxKeyConflictError } from '../../lib/outbox/postgres/postgres.errors.js';
import { fromPg } from '../../lib/outbox/postgres/pg.executor.js';
import { insertOutboxRows } from '../../lib/outbox/postgres/postgres.insert.js';
import { migrate, outboxSchema } from '../../lib/outbox/postgres/postgres.schema.js';
import { usePostgresServer } from '../support/postgres-server.js';
import { DRIVERS, type OpenDriver } from './outbox-executors.js';
import { messageRow, storedIds } from './outbox-rows.js';

const server = usePostgresServer();
const NOW = 1_800_000_000_000;

describe.each(DRIVERS)('$name', (driver) => {
  const schema = outboxSchema(`outbox_${DRIVERS.indexOf(driver)}`);
  let open: OpenDriver;

  beforeAll(async () => {
    open = await driver.open(server().url);
    await migrate(open.executor, schema);
    await open.executor.query(`CREATE TABLE "${schema.name}".orders (id text PRIMARY KEY)`, []);
  });
  afterAll(() => open?.close());

  /** The application's order and the outbox's message, in the application's transaction. */
  async function placeOrder(handle: unknown, key: string): Promise<string[]> {
    await open.executor.sessionOf(handle).query(`INSERT INTO "${schema.name}".orders (id) VALUES ($1)`, [key]);
    return insertOutboxRows(open.executor, handle, schema, [messageRow(key)], { now: NOW });
  }

  async function orders(): Promise<string[]> {
    const rows = await open.executor.query(`SELECT id FROM "${schema.name}".orders ORDER BY id`, []);
    return rows.map((row) => String(row.id));
  }

  it('stores the message with the order when the transaction commits', async () => {
    const ids = await open.transaction((handle) => placeOrder(handle, 'committed'));
    expect(ids).toEqual(['default.committed']);
    expect(await orders()).toContain('committed');
    expect(await storedIds(open.executor, schema)).toContain('default.committed');
  });

  it('stores nothing when the transaction rolls back', async () => {
    const rolledBack = new Error('the order failed');
    await expect(
      open.transaction(async (handle) => {
        await placeOrder(handle, 'rolled-back');
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    expect(await orders()).not.toContain('rolled-back');
    expect(await storedIds(open.executor, schema)).not.toContain('default.rolled-back');
  });

  it('refuses a handle that is not a transaction, and stores nothing', async () => {
    const refused = await insertOutboxRows(open.executor, open.notATransaction, schema, [messageRow('outside')], {
      now: NOW,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PostgresOutboxError);
    expect(refused).toMatchObject({ reason: 'not_in_transaction' });
    expect(await storedIds(open.executor, schema)).not.toContain('default.outside');
  });

  it(`${driver.endedTransaction === 'refused' ? 'refuses' : 'cannot tell'} a transaction that has ended`, async () => {
    const ended = await open.transaction((handle) => Promise.resolve(handle));
    const stored = await insertOutboxRows(open.executor, ended, schema, [messageRow('after-end')], { now: NOW }).then(
      () => true,
      (error: unknown) => {
        // Refused by our check, or by the library itself (Prisma, Kysely, Drizzle on PGlite) with its own error.
        if (error instanceof PostgresOutboxError) expect(error.reason).toBe('not_in_transaction');
        return false;
      },
    );
    expect(stored).toBe(driver.endedTransaction === 'cannot tell');
    expect((await storedIds(open.executor, schema)).includes('default.after-end')).toBe(stored);
  });

  it('takes the same request under a stored id again as a no-op, and refuses another request under it', async () => {
    await open.transaction((handle) => placeOrder(handle, 'reused'));
    const again = await open.transaction((handle) =>
      insertOutboxRows(open.executor, handle, schema, [messageRow('reused')], { now: NOW }),
    );
    expect(again).toEqual(['default.reused']);
    const conflict = await open
      .transaction((handle) =>
        insertOutboxRows(open.executor, handle, schema, [messageRow('reused', { path: '/api/other' })], { now: NOW }),
      )
      .catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(PostgresOutboxKeyConflictError);
    expect(conflict).toMatchObject({ reason: 'key_conflict', id: 'default.reused', differs: ['path'] });
    expect((await storedIds(open.executor, schema)).filter((id) => id === 'default.reused')).toHaveLength(1);
  });
});

describe('fromPg', () => {
  it('refuses a client of the pool on which no transaction was begun', async () => {
    const pool = new pg.Pool({ connectionString: server().url });
    try {
      const schema = outboxSchema('outbox_idle_client');
      const executor = fromPg(pool);
      await migrate(executor, schema);
      const client = await pool.connect();
      try {
        const refused = await insertOutboxRows(executor, client, schema, [messageRow('idle')], { now: NOW }).catch(
          (error: unknown) => error,
        );
        expect(refused).toMatchObject({ reason: 'not_in_transaction', message: expect.stringMatching(/BEGIN/) });
        expect(await storedIds(executor, schema)).toEqual([]);
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });
});
