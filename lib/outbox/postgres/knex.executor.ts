import {
  byAppearance,
  rowsOf,
  type PostgresExecutor,
  type SqlParameter,
  type SqlSession,
} from './postgres.executor.js';

/** What the outbox uses of a Knex instance or transaction (`knex` 3 with the `pg` client). */
interface KnexLike {
  raw(sql: string, bindings: SqlParameter[]): PromiseLike<unknown>;
  transaction<T>(work: (trx: KnexLike) => Promise<T>): Promise<T>;
  readonly isTransaction?: boolean;
  isCompleted?(): boolean;
}

function sessionOf(knex: KnexLike): SqlSession {
  return {
    async query(sql, parameters) {
      // Knex binds `?` by position; a `?` of the statement itself would be written `\\?` (the outbox's have none).
      const { texts, values } = byAppearance(sql, parameters);
      return rowsOf(await knex.raw(texts.join('?'), [...values]));
    },
  };
}

/** The executor over Knex: transactions are the `trx` of `knex.transaction(async (trx) => …)`. */
export function fromKnex(knex: KnexLike): PostgresExecutor {
  return {
    driver: 'Knex',
    notATransaction(handle) {
      if (typeof handle !== 'function' && (typeof handle !== 'object' || handle === null))
        return 'the transaction must be a Knex transaction';
      const trx = handle as KnexLike;
      if (trx.isTransaction !== true)
        return 'a Knex instance is not a transaction: pass the trx of knex.transaction(async (trx) => …)';
      return trx.isCompleted?.() === true ? 'the Knex transaction has ended' : undefined;
    },
    sessionOf: (handle) => sessionOf(handle as KnexLike),
    query: (sql, parameters) => sessionOf(knex).query(sql, parameters),
    transaction: (work) => knex.transaction((trx) => work(sessionOf(trx))),
  };
}
