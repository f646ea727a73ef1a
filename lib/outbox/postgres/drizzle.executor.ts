import {
  byAppearance,
  loadPeer,
  rowsOf,
  type PostgresExecutor,
  type SqlParameter,
  type SqlSession,
} from './postgres.executor.js';

/** What the outbox uses of a Drizzle database or transaction (`drizzle-orm` on node-postgres, PGlite, postgres.js). */
export interface DrizzleDatabaseLike {
  execute(query: unknown): Promise<unknown>;
  transaction<T>(work: (tx: DrizzleDatabaseLike) => Promise<T>): Promise<T>;
}

/** The part of `drizzle-orm` that builds a raw statement with bound parameters. */
interface DrizzleSql {
  readonly sql: {
    raw(text: string): unknown;
    param(value: SqlParameter): unknown;
    join(chunks: unknown[]): unknown;
  };
}

function sessionOf(db: DrizzleDatabaseLike, drizzle: Promise<DrizzleSql>): SqlSession {
  return {
    async query(text, parameters) {
      const { sql } = await drizzle;
      const { texts, values } = byAppearance(text, parameters);
      const chunks = texts.flatMap((part, i) =>
        i < values.length ? [sql.raw(part), sql.param(values[i])] : [sql.raw(part)],
      );
      return rowsOf(await db.execute(sql.join(chunks)));
    },
  };
}

/**
 * The executor over a Drizzle database: transactions are the `tx` of `db.transaction(async (tx) => …)`, which has a
 * `rollback()` the database has not.
 */
export function fromDrizzle(db: DrizzleDatabaseLike): PostgresExecutor {
  let drizzle: Promise<DrizzleSql> | undefined;
  const load = (): Promise<DrizzleSql> => (drizzle ??= loadPeer<DrizzleSql>('drizzle-orm', 'fromDrizzle'));
  return {
    driver: 'Drizzle',
    notATransaction(handle) {
      if (typeof handle !== 'object' || handle === null) return 'the transaction must be a Drizzle transaction';
      return typeof (handle as { rollback?: unknown }).rollback === 'function'
        ? undefined
        : 'a Drizzle database is not a transaction: pass the tx of db.transaction(async (tx) => …)';
    },
    sessionOf: (handle) => sessionOf(handle as DrizzleDatabaseLike, load()),
    query: (sql, parameters) => sessionOf(db, load()).query(sql, parameters),
    transaction: (work) => db.transaction((tx) => work(sessionOf(tx, load()))),
  };
}
