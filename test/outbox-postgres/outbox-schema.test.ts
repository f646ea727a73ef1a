import { createRequire } from 'node:module';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPglite } from '../../lib/outbox/postgres/pglite.executor.js';
import { PostgresOutboxError, PostgresOutboxKeyConflictError } from '../../lib/outbox/postgres/postgres.errors.js';
import { insertOutboxRows } from '../../lib/outbox/postgres/postgres.insert.js';
import type * as schemaModule from '../../lib/outbox/postgres/postgres.schema.js';
import { migrate, outboxSchema } from '../../lib/outbox/postgres/postgres.schema.js';
import { packageRoot } from '../support/built-package.js';
import { messageRow, storedIds } from './outbox-rows.js';

type SchemaModule = typeof schemaModule;

let db: PGlite;
beforeAll(async () => {
  db = await PGlite.create();
});
afterAll(() => db.close());

async function tables(schema: string): Promise<string[]> {
  const result = await db.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`,
    [schema],
  );
  return result.rows.map((row) => row.name);
}

describe('the outbox schema', () => {
  it('is created from the shipped file by both builds of the package, in the schema named', async () => {
    const esm = (await import(`${packageRoot}/dist/outbox/postgres/postgres.schema.js`)) as SchemaModule;
    const cjs = createRequire(`${packageRoot}/package.json`)(
      `${packageRoot}/dist/cjs/outbox/postgres/postgres.schema.js`,
    ) as SchemaModule;
    await esm.migrate(fromPglite(db), esm.outboxSchema('outbox_esm'));
    await cjs.migrate(fromPglite(db), cjs.outboxSchema('outbox_cjs'));
    expect(await tables('outbox_esm')).toEqual(['dead_letters', 'messages']);
    expect(await tables('outbox_cjs')).toEqual(['dead_letters', 'messages']);
    // The package ships the file it runs.
    const manifest = createRequire(import.meta.url)(`${packageRoot}/package.json`) as { files: string[] };
    expect(manifest.files).toContain('sql');
  });

  it('can be created again, changing nothing', async () => {
    const schema = outboxSchema('outbox_again');
    await migrate(fromPglite(db), schema);
    await db.transaction((tx) => insertOutboxRows(fromPglite(db), tx, schema, [messageRow('kept')], { now: 1 }));
    await migrate(fromPglite(db), schema);
    expect(await storedIds(fromPglite(db), schema)).toEqual(['default.kept']);
  });

  it('refuses a schema name that is not a plain lower-case Postgres name', () => {
    for (const name of ['Outbox', 'outbox"; DROP TABLE x; --', '', '1outbox', 'a'.repeat(64)]) {
      expect(() => outboxSchema(name)).toThrow(PostgresOutboxError);
    }
    expect(outboxSchema('a'.repeat(63)).name).toHaveLength(63);
  });
});

describe('a batch with an id taken by another request', () => {
  it('writes nothing of the batch, even in a transaction that commits after the error, and names what differs', async () => {
    const schema = outboxSchema('outbox_batch');
    const executor = fromPglite(db);
    await migrate(executor, schema);
    await db.transaction((tx) => insertOutboxRows(executor, tx, schema, [messageRow('taken')], { now: 1 }));
    // The application catches the error and commits the rest of its work.
    const conflict = await db.transaction((tx) =>
      insertOutboxRows(
        executor,
        tx,
        schema,
        [messageRow('fresh-1'), messageRow('taken', { body: { note: 'value-7f3a' } }), messageRow('fresh-2')],
        { now: 2 },
      ).catch((error: unknown) => error),
    );
    expect(conflict).toBeInstanceOf(PostgresOutboxKeyConflictError);
    expect(conflict).toMatchObject({ id: 'default.taken', differs: ['body'] });
    expect(JSON.stringify(conflict)).not.toContain('value-7f3a');
    expect(await storedIds(executor, schema)).toEqual(['default.taken']);
  });

  it('refuses two requests under one id in the same batch before writing', async () => {
    const schema = outboxSchema('outbox_twice');
    const executor = fromPglite(db);
    await migrate(executor, schema);
    const refused = await db
      .transaction((tx) =>
        insertOutboxRows(executor, tx, schema, [messageRow('twice'), messageRow('twice', { path: '/api/b' })], {
          now: 1,
        }),
      )
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ reason: 'key_conflict', differs: ['path'] });
    expect(await storedIds(executor, schema)).toEqual([]);
  });
});
