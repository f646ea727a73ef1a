import { rowsOf, type PostgresExecutor, type SqlParameter, type SqlSession } from './postgres.executor.js';

/** What the outbox uses of a Prisma client, or of the `tx` of its interactive transaction (Prisma 7). */
interface PrismaTransactionLike {
  $queryRawUnsafe(sql: string, ...parameters: SqlParameter[]): Promise<unknown>;
}

export interface PrismaClientLike extends PrismaTransactionLike {
  $transaction<T>(
    work: (tx: PrismaTransactionLike) => Promise<T>,
    options?: { maxWait?: number; timeout?: number },
  ): Promise<T>;
}

/**
 * How long the relay's own transactions may wait for a connection and run: its schema step waits for another
 * process's under the advisory lock, longer than Prisma's 5 s default allows on a busy database.
 */
const RELAY_TRANSACTION = { maxWait: 30_000, timeout: 120_000 };

function sessionOf(tx: PrismaTransactionLike): SqlSession {
  return { query: async (sql, parameters) => rowsOf(await tx.$queryRawUnsafe(sql, ...parameters)) };
}

/**
 * The executor over a Prisma 7 client on PostgreSQL (with `@prisma/adapter-pg` or another adapter): transactions
 * are the `tx` of `prisma.$transaction(async (tx) => …)`. Prisma refuses a statement on a `tx` whose transaction
 * ended by itself.
 */
export function fromPrisma(prisma: PrismaClientLike): PostgresExecutor {
  return {
    driver: 'Prisma',
    notATransaction(handle) {
      if (typeof handle !== 'object' || handle === null) return 'the transaction must be a Prisma transaction client';
      // A transaction's client has no `$connect` (Prisma denies it there); it has `$transaction`, for nesting.
      if (typeof (handle as { $connect?: unknown }).$connect === 'function')
        return 'a PrismaClient is not a transaction: pass the tx of prisma.$transaction(async (tx) => …)';
      return typeof (handle as { $queryRawUnsafe?: unknown }).$queryRawUnsafe === 'function'
        ? undefined
        : 'the transaction must be the tx of prisma.$transaction(async (tx) => …)';
    },
    sessionOf: (handle) => sessionOf(handle as PrismaTransactionLike),
    query: (sql, parameters) => sessionOf(prisma).query(sql, parameters),
    transaction: (work) => prisma.$transaction((tx) => work(sessionOf(tx)), RELAY_TRANSACTION),
  };
}
