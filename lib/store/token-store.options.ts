import type { ConfigReport } from '../options/config.report.js';
import type { ReadPlatformAuthOptions } from '../options/options.read.js';
import { optionDefault } from '../options/options.table.js';
import { parseEncryptionKeys, type EncryptionKey } from './token-store.codec.js';
import type { TokenStore } from './token-store.interface.js';
import { clientChannel } from './redis.channel.js';
import { RedisEntryStore } from './token-store.redis.js';
import type { SharedTokenTiming } from './shared-token.coordinator.js';
import {
  connectionSettings,
  configuresConnection,
  resolveRedisConnection,
  type RedisConnectionSettings,
} from './redis-connection.options.js';

/** The shared store's settings after start-up validation. */
export interface ResolvedTokenStoreConfig {
  /**
   * The store the user passed (`instance`), or one on the user's Redis client (`client`); absent when the module
   * connects to Redis itself (`connection`). Given with `connection`, it is a connection to that Redis someone else
   * made and closes (the tenant registry's, shared).
   */
  readonly store?: TokenStore;
  readonly connection?: RedisConnectionSettings;
  readonly keys: readonly EncryptionKey[];
  readonly keyPrefix: string;
  readonly timing: SharedTokenTiming;
  /** A stored entry longer than this is read as a miss, unopened (see `maxEntryBytesFor`). */
  readonly maxEntryBytes: number;
}

/**
 * The largest entry worth opening: a sealed token is its JSON in base64url (4/3 of it) with a JWE header, so twice
 * the largest token response accepted, plus 1 KiB, holds any token this module would store.
 */
function maxEntryBytesFor(maxResponseBytes: number): number {
  return 2 * maxResponseBytes + 1_024;
}

const DEFAULT_TOKEN_STORE_KEY_PREFIX = optionDefault<string>('tokenStore.keyPrefix');
const TIMING_NAMES = ['operationTimeoutMs', 'lockTtlMs', 'waitTimeoutMs'] as const;
const STORE_METHODS = ['get', 'setIfNewer', 'deleteIfTagged', 'acquireLock', 'releaseLock'] as const;

/**
 * Validates the token store options into `report`. `undefined` when no store is configured (then the module
 * behaves exactly as without this feature) or when there were problems. Never quotes a URL (it may hold a password)
 * or the key.
 */
export function resolveTokenStoreOptions(
  options: ReadPlatformAuthOptions,
  report: ConfigReport,
): ResolvedTokenStoreConfig | undefined {
  const given = options.tokenStore ?? {};
  const { encryptionKey: key, client, instance } = given;
  const connects = configuresConnection(given);
  if (instance === undefined && client === undefined && !connects) {
    if (key !== undefined) report.warn('tokenStore.encryptionKey', 'is set, but no token store is configured');
    for (const name of connectionSettings(given)) report.warn(name, 'is set, but no token store is configured');
    return undefined;
  }
  const problemsBefore = report.problems.length;
  const maxResponseBytes = options.exchange?.maxResponseBytes ?? optionDefault<number>('exchange.maxResponseBytes');
  const store = instance ?? (client === undefined ? undefined : storeOnClient(client, maxResponseBytes, report));
  let connection: RedisConnectionSettings | undefined;
  if (instance !== undefined || client !== undefined) {
    const passed = instance !== undefined ? 'tokenStore.instance' : 'tokenStore.client';
    if (instance !== undefined && client !== undefined)
      report.problem('tokenStore.client', `is set together with ${report.name('tokenStore.instance')}; pass one store`);
    for (const name of connectionSettings(given)) {
      report.problem(
        name,
        `is set together with ${report.name(passed)}; configure the client of the store you pass instead (set either that or the Redis settings, not both)`,
      );
    }
    if (
      instance !== undefined &&
      !STORE_METHODS.every((name) => typeof (store as unknown as Record<string, unknown>)[name] === 'function')
    ) {
      report.problem('tokenStore.instance', `must implement TokenStore (${STORE_METHODS.join(', ')})`);
    }
  } else {
    connection = resolveRedisConnection(given, report);
  }
  const keys = key === undefined ? 'is required with a token store' : parseEncryptionKeys(key);
  if (typeof keys === 'string') report.problem('tokenStore.encryptionKey', keys);

  const prefix = given.keyPrefix ?? DEFAULT_TOKEN_STORE_KEY_PREFIX;
  if (typeof prefix !== 'string' || /[{}\s]/.test(prefix)) {
    report.problem('tokenStore.keyPrefix', 'must be a string without braces or white space');
  }
  const timing = Object.fromEntries(
    TIMING_NAMES.map((name) => [name, given[name] ?? optionDefault<number>(`tokenStore.${name}`)]),
  ) as unknown as SharedTokenTiming;
  for (const [name, value] of Object.entries(timing)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
      report.problem(`tokenStore.${name}`, 'must be a finite number of milliseconds, at least 1');
    }
  }
  if (report.problems.length > problemsBefore || typeof keys === 'string') return undefined;
  if (timing.waitTimeoutMs <= timing.lockTtlMs) {
    report.warn(
      'tokenStore.waitTimeoutMs',
      'is not above lockTtlMs: when a replica dies mid-exchange, the others exchange on their own instead of one taking over',
    );
  }
  return {
    store,
    connection,
    keys,
    keyPrefix: prefix,
    timing,
    maxEntryBytes: maxEntryBytesFor(maxResponseBytes),
  };
}

/** A store on the application's Redis client (`tokenStore.client`); the client stays the application's. */
function storeOnClient(client: unknown, maxResponseBytes: number, report: ConfigReport): TokenStore | undefined {
  const channel = clientChannel(client);
  if (channel) return new RedisEntryStore(channel, maxEntryBytesFor(maxResponseBytes));
  report.problem(
    'tokenStore.client',
    'is not a node-redis client from createClient, createCluster or createSentinel; for another client pass a plain object { sendCommand: (args) => … } that sends args as one command',
  );
  return undefined;
}
