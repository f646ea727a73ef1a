import {
  rowsOf,
  type ListenEvents,
  type PostgresExecutor,
  type SqlParameter,
  type SqlSession,
} from './postgres.executor.js';

/** What the outbox uses of a node-postgres client (a `PoolClient`, a `Client`). */
interface PgClientLike {
  query(sql: string, parameters?: readonly SqlParameter[]): Promise<unknown>;
  /** `'I'` idle, `'T'` in a transaction, `'E'` in a failed one (node-postgres 8.21 and later; before, only a Pool is told apart). */
  getTransactionStatus?(): string | null;
  on(event: 'notification', listener: (message: { channel: string }) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
}

interface PgPoolClientLike extends PgClientLike {
  release(destroy?: boolean | Error): void;
}

/** What the outbox uses of a node-postgres `Pool`. */
interface PgPoolLike {
  query(sql: string, parameters?: readonly SqlParameter[]): Promise<unknown>;
  connect(): Promise<PgPoolClientLike>;
}

const STATUS_PROBLEM: Readonly<Record<string, string>> = {
  I: 'the node-postgres client is not in a transaction: run BEGIN on it first',
  E: 'the transaction of the node-postgres client has failed: roll it back',
};

function isPool(handle: unknown): boolean {
  const { connect, totalCount } = handle as { connect?: unknown; totalCount?: unknown };
  return typeof connect === 'function' && typeof totalCount === 'number';
}

function sessionOf(client: PgClientLike): SqlSession {
  return { query: async (sql, parameters) => rowsOf(await client.query(sql, parameters)) };
}

/** The executor over a node-postgres (`pg` 8) pool: transactions are the clients the pool lends (`pool.connect()`). */
export function fromPg(pool: PgPoolLike): PostgresExecutor {
  return {
    driver: 'node-postgres',
    notATransaction(handle) {
      if (typeof handle !== 'object' || handle === null) return 'the transaction must be a node-postgres client';
      if (isPool(handle))
        return 'a node-postgres Pool is not a transaction: pass the client you ran BEGIN on (await pool.connect())';
      const status = (handle as PgClientLike).getTransactionStatus?.();
      return status ? STATUS_PROBLEM[status] : undefined;
    },
    sessionOf: (handle) => sessionOf(handle as PgClientLike),
    query: async (sql, parameters) => rowsOf(await pool.query(sql, parameters)),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(sessionOf(client));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // A client whose ROLLBACK fails too is broken: the pool must not lend it again.
        await client.query('ROLLBACK').then(
          () => client.release(),
          (rollback: unknown) => client.release(rollback instanceof Error ? rollback : true),
        );
        throw error;
      }
    },
    async listen(channel: string, events: ListenEvents) {
      const client = await pool.connect();
      let lost = false;
      client.on('error', (error) => {
        lost = true;
        events.lost(error);
      });
      client.on('notification', (message) => {
        if (message.channel === channel) events.notified();
      });
      try {
        await client.query(`LISTEN "${channel}"`);
      } catch (error) {
        client.release(true);
        throw error;
      }
      return async () => {
        if (lost) return client.release(true);
        await client.query(`UNLISTEN "${channel}"`).then(
          () => client.release(),
          () => client.release(true),
        );
      };
    },
  };
}
