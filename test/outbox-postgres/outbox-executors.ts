import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzleOnPg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzleOnPglite } from 'drizzle-orm/pglite';
import knex from 'knex';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { fromDrizzle, type DrizzleDatabaseLike } from '../../lib/outbox/postgres/drizzle.executor.js';
import { fromKnex } from '../../lib/outbox/postgres/knex.executor.js';
import { fromKysely } from '../../lib/outbox/postgres/kysely.executor.js';
import { fromPg } from '../../lib/outbox/postgres/pg.executor.js';
import { fromPglite } from '../../lib/outbox/postgres/pglite.executor.js';
import type { PostgresExecutor } from '../../lib/outbox/postgres/postgres.executor.js';
import { fromPrisma } from '../../lib/outbox/postgres/prisma.executor.js';
import { fromTypeOrm } from '../../lib/outbox/postgres/typeorm.executor.js';
import { openPrismaClient } from './prisma-client.js';

/** One library on one database, as an application holds it. */
export interface OpenDriver {
  readonly executor: PostgresExecutor;
  /** Runs `work` in a transaction of the library's own, handing it the handle `enqueueIn` takes. */
  transaction<T>(work: (handle: unknown) => Promise<T>): Promise<T>;
  /** What an application might pass by mistake: the pool, the database object, the client. */
  readonly notATransaction: unknown;
  close(): Promise<void>;
}

export interface DriverCase {
  readonly name: string;
  /**
   * What a statement through the handle of a transaction that has ended does: refused (by the executor, or by the
   * library), or run on its own, committed, where nothing public tells the transaction ended (Drizzle keeps the
   * node-postgres client it ran on private, and the pool has lent it again or holds it idle).
   */
  readonly endedTransaction: 'refused' | 'cannot tell';
  /** Opens the library on PGlite in this process, or on the file's PostgreSQL server at `url`. */
  open(url: string): Promise<OpenDriver>;
}

export const DRIVERS: readonly DriverCase[] = [
  {
    name: 'fromPglite (@electric-sql/pglite)',
    endedTransaction: 'refused',
    async open() {
      const db = await PGlite.create();
      return {
        executor: fromPglite(db),
        transaction: (work) => db.transaction(work),
        notATransaction: db,
        close: () => db.close(),
      };
    },
  },
  {
    name: 'fromDrizzle (drizzle-orm on PGlite)',
    endedTransaction: 'refused',
    async open() {
      const client = await PGlite.create();
      const db = drizzleOnPglite(client) as unknown as DrizzleDatabaseLike;
      return {
        executor: fromDrizzle(db),
        transaction: (work) => db.transaction(work),
        notATransaction: db,
        close: () => client.close(),
      };
    },
  },
  {
    name: 'fromPg (pg)',
    endedTransaction: 'refused',
    async open(url) {
      const pool = new pg.Pool({ connectionString: url });
      return {
        executor: fromPg(pool),
        async transaction(work) {
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            const result = await work(client);
            await client.query('COMMIT');
            return result;
          } catch (error) {
            await client.query('ROLLBACK');
            throw error;
          } finally {
            client.release();
          }
        },
        notATransaction: pool,
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'fromDrizzle (drizzle-orm on pg)',
    endedTransaction: 'cannot tell',
    async open(url) {
      const pool = new pg.Pool({ connectionString: url });
      const db = drizzleOnPg(pool) as unknown as DrizzleDatabaseLike;
      return {
        executor: fromDrizzle(db),
        transaction: (work) => db.transaction(work),
        notATransaction: db,
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'fromTypeOrm (typeorm)',
    endedTransaction: 'refused',
    async open(url) {
      const dataSource = await new DataSource({ type: 'postgres', url }).initialize();
      return {
        executor: fromTypeOrm(dataSource),
        transaction: (work) => dataSource.transaction(work),
        notATransaction: dataSource.manager,
        close: () => dataSource.destroy(),
      };
    },
  },
  {
    name: 'fromPrisma (@prisma/client with @prisma/adapter-pg)',
    endedTransaction: 'refused',
    async open(url) {
      const prisma = await openPrismaClient(url);
      return {
        executor: fromPrisma(prisma),
        transaction: (work) => prisma.$transaction(work),
        notATransaction: prisma,
        close: () => prisma.$disconnect(),
      };
    },
  },
  {
    name: 'fromKysely (kysely)',
    endedTransaction: 'refused',
    async open(url) {
      const db = new Kysely<unknown>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }),
      });
      return {
        executor: fromKysely(db),
        transaction: (work) => db.transaction().execute(work),
        notATransaction: db,
        close: () => db.destroy(),
      };
    },
  },
  {
    name: 'fromKnex (knex)',
    endedTransaction: 'refused',
    async open(url) {
      const db = knex({ client: 'pg', connection: url });
      return {
        executor: fromKnex(db),
        transaction: (work) => db.transaction(work),
        notATransaction: db,
        close: () => db.destroy(),
      };
    },
  },
];
