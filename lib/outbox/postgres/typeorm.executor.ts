import type { PostgresExecutor, SqlParameter, SqlRow, SqlSession } from './postgres.executor.js';

/** What the outbox uses of a TypeORM `QueryRunner`. */
interface TypeOrmQueryRunnerLike {
  readonly isTransactionActive: boolean;
  query(sql: string, parameters: SqlParameter[], structured: true): Promise<{ records: unknown[] }>;
  release(): Promise<void>;
}

/** What the outbox uses of a TypeORM `DataSource` (`typeorm` 1, the `postgres` driver). */
interface TypeOrmDataSourceLike {
  createQueryRunner(): TypeOrmQueryRunnerLike;
  transaction<T>(work: (manager: { readonly queryRunner?: TypeOrmQueryRunnerLike }) => Promise<T>): Promise<T>;
}

/** A transaction's `EntityManager` holds its query runner; a query runner is given as it is. */
function runnerOf(handle: unknown): TypeOrmQueryRunnerLike | undefined {
  if (typeof handle !== 'object' || handle === null) return undefined;
  if ('isTransactionActive' in handle) return handle as TypeOrmQueryRunnerLike;
  return (handle as { queryRunner?: TypeOrmQueryRunnerLike }).queryRunner;
}

function sessionOf(runner: TypeOrmQueryRunnerLike): SqlSession {
  // The structured result: TypeORM gives an UPDATE's or DELETE's plain result as [rows, count].
  return { query: async (sql, parameters) => (await runner.query(sql, [...parameters], true)).records as SqlRow[] };
}

/**
 * The executor over a TypeORM data source: transactions are the `EntityManager` of
 * `dataSource.transaction(async (manager) => …)` or a `QueryRunner` after `startTransaction()`.
 */
export function fromTypeOrm(dataSource: TypeOrmDataSourceLike): PostgresExecutor {
  return {
    driver: 'TypeORM',
    notATransaction(handle) {
      const runner = runnerOf(handle);
      if (!runner)
        return 'the EntityManager has no query runner, so it is not in a transaction: pass the manager of dataSource.transaction(async (manager) => …)';
      return runner.isTransactionActive ? undefined : 'the TypeORM query runner is not in a transaction';
    },
    sessionOf: (handle) => sessionOf(runnerOf(handle)!),
    async query(sql, parameters) {
      const runner = dataSource.createQueryRunner();
      try {
        return await sessionOf(runner).query(sql, parameters);
      } finally {
        await runner.release();
      }
    },
    transaction: (work) => dataSource.transaction((manager) => work(sessionOf(manager.queryRunner!))),
  };
}
