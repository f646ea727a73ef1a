import { rowsOf, type PostgresExecutor, type SqlParameter, type SqlSession } from './postgres.executor.js';

/** What the outbox uses of a PGlite transaction (the `tx` of `db.transaction(async (tx) => …)`). */
interface PgliteTransactionLike {
  query(sql: string, parameters?: SqlParameter[]): Promise<unknown>;
  readonly closed: boolean;
}

/** What the outbox uses of a PGlite database (`@electric-sql/pglite`). */
interface PgliteLike {
  query(sql: string, parameters?: SqlParameter[]): Promise<unknown>;
  transaction<T>(work: (tx: PgliteTransactionLike) => Promise<T>): Promise<T>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
}

function sessionOf(tx: PgliteTransactionLike): SqlSession {
  return { query: async (sql, parameters) => rowsOf(await tx.query(sql, [...parameters])) };
}

/**
 * The executor over a PGlite database, in this process. PGlite has one connection: a statement on the database
 * while a transaction is open waits for that transaction, so a handle must be the transaction's own `tx`.
 */
export function fromPglite(db: PgliteLike): PostgresExecutor {
  return {
    driver: 'PGlite',
    notATransaction(handle) {
      if (typeof handle !== 'object' || handle === null) return 'the transaction must be a PGlite transaction';
      if (typeof (handle as { transaction?: unknown }).transaction === 'function')
        return 'a PGlite database is not a transaction: pass the tx of db.transaction(async (tx) => …)';
      if (typeof (handle as { rollback?: unknown }).rollback !== 'function')
        return 'the transaction must be the tx of db.transaction(async (tx) => …)';
      return (handle as PgliteTransactionLike).closed ? 'the PGlite transaction has ended' : undefined;
    },
    sessionOf: (handle) => sessionOf(handle as PgliteTransactionLike),
    query: async (sql, parameters) => rowsOf(await db.query(sql, [...parameters])),
    transaction: (work) => db.transaction((tx) => work(sessionOf(tx))),
    async listen(channel, events) {
      // In this process: there is no connection to lose.
      return db.listen(channel, () => events.notified());
    },
  };
}
