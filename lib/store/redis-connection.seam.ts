import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import { ConfigReport } from '../options/config.report.js';
import { STORE_ROWS } from '../options/options.table.store.js';
import type { OptionTable } from '../options/options.table.types.js';
import { readTableEnv } from '../options/platform-auth.config.js';
import type { RedisConnectionOptions } from '../options/token-store-options.interface.js';
import { buildClient, loadNodeRedis } from './redis-client.factory.js';
import { resolveRedisConnection, type RedisConnectionSettings } from './redis-connection.options.js';

/** The store's settings that say where Redis is and how to reach it: what another part's connection takes. */
const CONNECTION_ROWS = [
  'url',
  'clusterNodes',
  'sentinel.nodes',
  'sentinel.masterName',
  'username',
  'password',
  'tls.caPath',
  'tls.certPath',
  'tls.keyPath',
] as const;

/** Back-off between reconnections of a lasting client: fast at first, then every 2 s, for ever. */
const reconnectStrategy = (retries: number): number => Math.min(50 * 2 ** retries, 2_000);
/** How long one connection attempt of a lasting client may take before the next one. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * The store's checks, with each problem named by the caller's option instead of `tokenStore` (`connection.url
 * (PLATFORM_QUEUE_REDIS_URL)`), cross-references included.
 */
class RenamedReport extends ConfigReport {
  constructor(
    private readonly option: string,
    variables: Readonly<Record<string, string>>,
  ) {
    super(undefined, variables);
  }

  private renamed(name: string): string {
    return name.replace(/^tokenStore(?=\.|$)/, this.option);
  }

  override name(option: string): string {
    return super.name(this.renamed(option));
  }

  override problem(option: string, message: string): void {
    super.problem(this.renamed(option), message);
  }

  override warn(option: string, message: string): void {
    super.warn(this.renamed(option), message);
  }
}

function isNodeRedisClient(client: unknown): boolean {
  const members = (client ?? {}) as Record<string, unknown>;
  return ['sendCommand', 'duplicate', 'connect'].every((name) => typeof members[name] === 'function');
}

/**
 * A Redis connection for a part built on this package (an add-on), configured as the shared token store's is, with
 * the store's rules: a URL, Cluster seed nodes or Sentinel, an ACL user and password, TLS files; or `client`, a
 * node-redis client of the application's (`createClient`, `createCluster`, `createSentinel`), used as it is. Settings
 * in `connection` win; without it the variables `<variablePrefix>_URL`, `_CLUSTER_NODES`, `_SENTINEL_NODES`,
 * `_SENTINEL_MASTER`, `_USERNAME`, `_PASSWORD`, `_TLS_CA_PATH`, `_TLS_CERT_PATH` and `_TLS_KEY_PATH` are read, each
 * meaning what the store's `PLATFORM_TOKEN_STORE_*` means. `undefined` when neither sets a Redis.
 *
 * Checked now, every problem at once: a `PlatformAuthConfigError` naming each setting by `option`
 * (`connection.url (PLATFORM_QUEUE_REDIS_URL)`), never a URL or password. The password is kept as a secret.
 * `open()` loads node-redis (the optional peer `redis`) and makes a client that lasts: it reconnects by itself, keeps
 * commands made while Redis is away until it is back, and arms no timer per command, so its owner bounds its own
 * waits. It is connecting when `open()` returns; `close()` destroys it (an application's client stays open).
 */
export function defineRedisConnection(input: {
  readonly connection?: RedisConnectionOptions;
  readonly option: string;
  readonly variablePrefix: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}): { open(): Promise<{ readonly client: object; close(): void }> } | undefined {
  const { option, variablePrefix } = input;
  const table: OptionTable = Object.fromEntries(
    CONNECTION_ROWS.map((name) => {
      const row = STORE_ROWS[`tokenStore.${name}`];
      return [name, { ...row, env: row.env.replace(/^PLATFORM_TOKEN_STORE/, variablePrefix) }];
    }),
  );
  const variables = Object.fromEntries(CONNECTION_ROWS.map((name) => [`${option}.${name}`, table[name].env!]));
  const report = new RenamedReport(option, variables);
  const given: NonNullable<typeof input.connection> =
    input.connection ?? readTableEnv(table, { ...(input.env ?? process.env) });
  const { client, ...settings } = given;
  if (client !== undefined) {
    if (!isNodeRedisClient(client))
      report.problem(
        'tokenStore.client',
        'is not a node-redis client from createClient, createCluster or createSentinel',
      );
    for (const name of Object.keys(settings).filter((key) => settings[key as keyof typeof settings] !== undefined))
      report.problem(
        `tokenStore.${name}`,
        `is set together with ${report.name('tokenStore.client')}; give one of them`,
      );
    report.throwIfProblems();
    return { open: () => Promise.resolve({ client, close: () => undefined }) };
  }
  if (Object.values(settings).every((value) => value === undefined)) return undefined;
  const resolved = resolveRedisConnection(settings, report);
  report.throwIfProblems();
  return { open: () => openLasting(resolved!) };
}

async function openLasting(settings: RedisConnectionSettings): Promise<{ readonly client: object; close(): void }> {
  const redis = await loadNodeRedis().catch((error: unknown) => {
    throw new PlatformAuthConfigError([
      { option: 'redis', setting: 'redis', message: error instanceof Error ? error.message : String(error) },
    ]);
  });
  const { client } = buildClient(redis, settings, CONNECT_TIMEOUT_MS, { reconnectStrategy });
  // Its owner listens too; this one keeps an 'error' event nobody else heard from ending the process.
  client.on('error', () => undefined);
  // Not awaited: a Redis that is down at start-up is waited for like one that goes down later.
  client.connect().catch(() => undefined);
  return { client, close: () => void client.destroy() };
}
