import { readFile } from 'node:fs/promises';
import { PostgresOutboxError } from './postgres.errors.js';
import type { PostgresExecutor } from './postgres.executor.js';

/** The schema the outbox's tables are in unless the application names another. */
const DEFAULT_SCHEMA = 'platform_outbox';

/** The file the package ships for teams that migrate with their own tool: the one copy of the tables. */
const SCHEMA_FILE = 'sql/platform-outbox.postgres.sql';
/** How the file names the schema, to be replaced by the application's. */
const SCHEMA_IN_FILE = `"${DEFAULT_SCHEMA}"`;
/** A name that needs no quoting rules of our own: lower-case Postgres identifiers up to their 63-byte limit. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The outbox's schema: its name, and the names its statements use. */
export interface OutboxSchema {
  readonly name: string;
  /** A table or sequence of the outbox, schema-qualified and quoted. */
  table(name: 'messages' | 'dead_letters' | 'lease_epochs'): string;
  /** The channel `pg_notify` wakes the relays on. */
  readonly channel: string;
  /**
   * SQL that takes the transaction-level advisory lock of one owner's order key (column expressions given): the lock
   * every insert of that key takes, so that its sequence order is the order its transactions commit in.
   */
  orderLock(owner: string, orderKey: string): string;
}

export function outboxSchema(name: string = DEFAULT_SCHEMA): OutboxSchema {
  if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) {
    throw new PostgresOutboxError(
      'config',
      'the outbox schema must be a lower-case Postgres name: a letter or _, then letters, digits or _, at most 63',
    );
  }
  return {
    name,
    table: (table) => `"${name}".${table}`,
    channel: name,
    orderLock: (owner, orderKey) =>
      `pg_advisory_xact_lock(hashtextextended(jsonb_build_array('${name}', ${owner}, ${orderKey})::text, 0))`,
  };
}

/**
 * The shipped file, found from this module wherever it runs: lib/ under test, dist/ and dist/cjs/ in the package,
 * each some folders below the package's root.
 */
async function readSchemaFile(): Promise<string> {
  let dir = new URL('.', import.meta.url);
  for (let depth = 0; depth < 6; depth++, dir = new URL('..', dir)) {
    const text = await readFile(new URL(SCHEMA_FILE, dir), 'utf8').catch(() => undefined);
    if (text !== undefined) return text;
  }
  throw new PostgresOutboxError('config', `the outbox cannot find its ${SCHEMA_FILE} in the package`);
}

/** The shipped file's statements for `schema`, one by one: every library's raw query takes one statement. */
async function schemaStatements(schema: OutboxSchema): Promise<string[]> {
  const text = (await readSchemaFile()).replace(/--.*$/gm, '').replaceAll(SCHEMA_IN_FILE, `"${schema.name}"`);
  return text
    .split(';')
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}

/**
 * Creates the outbox's tables where they are missing, in one transaction under an advisory lock on the schema's
 * name: processes starting at once create them once (`CREATE … IF NOT EXISTS` alone races on the catalogs).
 */
export async function migrate(executor: PostgresExecutor, schema: OutboxSchema): Promise<void> {
  const statements = await schemaStatements(schema);
  await executor.transaction(async (session) => {
    await session.query('SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))::text AS locked', [
      `nestjs-platform-auth outbox schema ${schema.name}`,
    ]);
    for (const statement of statements) await session.query(statement, []);
  });
}
