import { isLoopbackHost } from '../util/loopback.util.js';
import { definedOnly, type ConfigReport } from '../options/config.report.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import { optionDefault } from '../options/options.table.js';
import { parseEncryptionKeys, type EncryptionKey } from './token-store.codec.js';
import type { TokenStore } from './token-store.interface.js';
import type { SharedTokenTiming } from './shared-token.coordinator.js';

/** The shared store's settings after start-up validation. */
export interface ResolvedTokenStoreConfig {
  /** The store the user passed; absent when the module builds one from `url`. */
  readonly store?: TokenStore;
  readonly url?: string;
  readonly keys: readonly EncryptionKey[];
  readonly keyPrefix: string;
  readonly timing: SharedTokenTiming;
}

export const DEFAULT_TOKEN_STORE_KEY_PREFIX = optionDefault<string>('tokenStoreKeyPrefix');
const DEFAULT_TIMING: SharedTokenTiming = {
  operationTimeoutMs: optionDefault<number>('tokenStoreTiming.operationTimeoutMs'),
  lockTtlMs: optionDefault<number>('tokenStoreTiming.lockTtlMs'),
  waitTimeoutMs: optionDefault<number>('tokenStoreTiming.waitTimeoutMs'),
};
const STORE_METHODS = ['get', 'setIfNewer', 'deleteIfTagged', 'acquireLock', 'releaseLock'] as const;

/**
 * Validates the token store options into `report`. `undefined` when no store is configured (then the module
 * behaves exactly as without this feature) or when there were problems. Never quotes the URL (it may hold a
 * password) or the key.
 */
export function resolveTokenStoreOptions(
  options: PlatformAuthOptions,
  report: ConfigReport,
): ResolvedTokenStoreConfig | undefined {
  const { tokenStore: store, tokenStoreUrl: url, tokenStoreEncryptionKey: key } = options;
  if (store === undefined && url === undefined) {
    if (key !== undefined) report.warn('tokenStoreEncryptionKey', 'is set, but no token store is configured');
    return undefined;
  }
  const problemsBefore = report.problems.length;
  if (store !== undefined && url !== undefined) {
    report.problem('tokenStoreUrl', 'set either tokenStore or tokenStoreUrl, not both');
  }
  if (
    store !== undefined &&
    !STORE_METHODS.every((name) => typeof (store as unknown as Record<string, unknown>)[name] === 'function')
  ) {
    report.problem('tokenStore', `must implement TokenStore (${STORE_METHODS.join(', ')})`);
  }
  if (url !== undefined && !isRedisUrl(url)) {
    report.problem('tokenStoreUrl', 'must be a redis:// or rediss:// URL');
  } else if (url !== undefined && sendsPasswordInClear(url)) {
    report.warn(
      'tokenStoreUrl',
      'is redis:// with a password to a host off loopback: the password crosses the network in clear text; use rediss://',
    );
  }
  const keys = key === undefined ? 'is required with a token store' : parseEncryptionKeys(key);
  if (typeof keys === 'string') report.problem('tokenStoreEncryptionKey', keys);

  const prefix = options.tokenStoreKeyPrefix ?? DEFAULT_TOKEN_STORE_KEY_PREFIX;
  if (typeof prefix !== 'string' || /[{}\s]/.test(prefix)) {
    report.problem('tokenStoreKeyPrefix', 'must be a string without braces or white space');
  }
  const timing = { ...DEFAULT_TIMING, ...definedOnly(options.tokenStoreTiming) };
  for (const [name, value] of Object.entries(timing)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
      report.problem(`tokenStoreTiming.${name}`, 'must be a finite number of milliseconds, at least 1');
    }
  }
  if (report.problems.length > problemsBefore || typeof keys === 'string') return undefined;
  if (timing.waitTimeoutMs <= timing.lockTtlMs) {
    report.warn(
      'tokenStoreTiming.waitTimeoutMs',
      'is not above lockTtlMs: when a replica dies mid-exchange, the others exchange on their own instead of one taking over',
    );
  }
  return { store, url, keys, keyPrefix: prefix, timing };
}

function sendsPasswordInClear(value: string): boolean {
  const url = new URL(value);
  return url.protocol === 'redis:' && url.password !== '' && !isLoopbackHost(url.hostname);
}

function isRedisUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
}
