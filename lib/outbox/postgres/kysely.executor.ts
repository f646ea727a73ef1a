import { loadPeer, rowsOf, type PostgresExecutor, type SqlParameter, type SqlSession } from './postgres.executor.js';

/** What the outbox uses of a Kysely instance or transaction (`kysely` 0.28 on its Postgres dialect). */
interface KyselyLike {
  readonly isTransaction: boolean;
  executeQuery(query: unknown): Promise<unknown>;
  transaction(): { execute<T>(work: (trx: KyselyLike) => Promise<T>): Promise<T> };
}

/** The part of `kysely` that makes a raw statement with parameters. */
interface KyselyRaw {
  readonly CompiledQuery: { raw(sql: string, parameters: SqlParameter[]): unknown };
}

function sessionOf(db: KyselyLike, kysely: Promise<KyselyRaw>): SqlSession {
  return {
    async query(sql, parameters) {
      const { CompiledQuery } = await kysely;
      return rowsOf(await db.executeQuery(CompiledQuery.raw(sql, [...parameters])));
    },
  };
}

/** The executor over Kysely: transactions are the `trx` of `db.transaction().execute(async (trx) => …)`. */
export function fromKysely(db: KyselyLike): PostgresExecutor {
  let kysely: Promise<KyselyRaw> | undefined;
  const load = (): Promise<KyselyRaw> => (kysely ??= loadPeer<KyselyRaw>('kysely', 'fromKysely'));
  return {
    driver: 'Kysely',
    notATransaction(handle) {
      if (typeof handle !== 'object' || handle === null) return 'the transaction must be a Kysely transaction';
      return (handle as KyselyLike).isTransaction === true
        ? undefined
        : 'a Kysely instance is not a transaction: pass the trx of db.transaction().execute(async (trx) => …)';
    },
    sessionOf: (handle) => sessionOf(handle as KyselyLike, load()),
    query: (sql, parameters) => sessionOf(db, load()).query(sql, parameters),
    transaction: (work) => db.transaction().execute((trx) => work(sessionOf(trx, load()))),
  };
}
