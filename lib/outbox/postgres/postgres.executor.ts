import { PostgresOutboxError } from './postgres.errors.js';

/**
 * A statement's parameter. The outbox passes text (and null) only and casts in SQL (`$1::bigint`), so every driver
 * sends the same thing whatever it makes of a JavaScript number or array.
 */
export type SqlParameter = string | null;

/** A row as the driver gives it. The outbox selects text, integers, floats and booleans only (`::text` elsewhere). */
export type SqlRow = Readonly<Record<string, unknown>>;

/** Runs one statement on a connection the caller holds (the caller's transaction, the relay's own). */
export interface SqlSession {
  query(sql: string, parameters: readonly SqlParameter[]): Promise<readonly SqlRow[]>;
}

/** What a LISTEN reports: a notification on the channel, or the connection it listened on lost. */
export interface ListenEvents {
  notified(): void;
  lost(error: unknown): void;
}

/**
 * The outbox's way into a database, whichever library the application uses: `fromPg`, `fromPglite`,
 * `fromTypeOrm`, `fromPrisma`, `fromDrizzle`, `fromKysely`, `fromKnex`. The library is the application's (an
 * optional peer, loaded by nothing here) and stays open after the outbox stops.
 */
export interface PostgresExecutor {
  /** The library's name, for messages. */
  readonly driver: string;
  /**
   * Why `handle` is not an open transaction of this library (a pool, a database object, a transaction that ended),
   * where the library can tell; `undefined` when it is one or the library cannot tell.
   */
  notATransaction(handle: unknown): string | undefined;
  /** Runs one statement in the caller's transaction `handle`. */
  sessionOf(handle: unknown): SqlSession;
  /** Runs one statement on a connection of the pool, committed on its own. */
  query(sql: string, parameters: readonly SqlParameter[]): Promise<readonly SqlRow[]>;
  /** Runs `work` in a transaction of its own: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (session: SqlSession) => Promise<T>): Promise<T>;
  /**
   * LISTEN on `channel` on a connection of its own, until the returned function is called; absent where the library
   * gives no such connection (the relay then polls only).
   */
  listen?(channel: string, events: ListenEvents): Promise<() => Promise<void>>;
}

/** Loads an optional peer with `import()`, or says which package to install. */
export async function loadPeer<T>(name: string, executor: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new PostgresOutboxError('config', `${executor} needs the package ${name}: npm install ${name}`);
  }
}

/** The rows of a result that is either the rows themselves or an object holding them (`{ rows }`). */
export function rowsOf(result: unknown): readonly SqlRow[] {
  if (Array.isArray(result)) return result as SqlRow[];
  const { rows } = (result ?? {}) as { rows?: unknown };
  return Array.isArray(rows) ? (rows as SqlRow[]) : [];
}

/**
 * The statement cut at its `$n` placeholders, with the parameter of each place in order: for the libraries whose raw
 * SQL takes parameters by position of appearance (a `?` each, or a chunk each) rather than by number.
 */
export function byAppearance(
  sql: string,
  parameters: readonly SqlParameter[],
): { readonly texts: readonly string[]; readonly values: readonly SqlParameter[] } {
  const texts = sql.split(/\$\d+/);
  const values = [...sql.matchAll(/\$(\d+)/g)].map(([, number]) => parameters[Number(number) - 1] ?? null);
  return { texts, values };
}
