import type { Clock } from '../platform-auth.clock.js';
import type { TokenExchangeError } from '../platform-auth.errors.js';
import { backoffError } from '../token/token-backoff.error.js';
import type { ExchangeOutcome, IssuedToken } from '../token/token.cache.js';
import { fingerprintOf, sharedFailureOf, type TokenStoreCodec } from './token-store.codec.js';
import type { TokenStore, TokenStoreEntry } from './token-store.interface.js';
import type { SharedStoreHealth } from './shared-store.health.js';

/** The keys of one key pair's entries, under its namespace (`StoreNamespaces`). */
export interface PairKeys {
  readonly namespace: string;
  readonly token: string;
  readonly lock: string;
  readonly failure: string;
}

/** The base of every key of one pair; the hash tag puts them all in one Redis Cluster slot. */
export function storeKeyBase(keyPrefix: string, namespace: string): string {
  return `${keyPrefix}{${namespace}}`;
}

export function pairKeys(keyPrefix: string, namespace: string): PairKeys {
  const base = storeKeyBase(keyPrefix, namespace);
  return { namespace, token: `${base}:token`, lock: `${base}:lock`, failure: `${base}:failure` };
}

/** One bounded store operation (the coordinator's: it times out and tells the store's health). */
type Attempt = <T>(operation: () => Promise<T>) => Promise<T>;

/**
 * The token and failure entries of a pair, sealed and opened with the pair's namespace: an entry copied under
 * another pair's keys does not open there. What is read is checked (size, tag, kind, version) before it is used.
 */
export class PairEntries {
  constructor(
    private readonly store: TokenStore,
    private readonly codec: TokenStoreCodec,
    private readonly clock: Clock,
    private readonly maxEntryBytes: number,
    private readonly health: SharedStoreHealth,
    private readonly attempt: Attempt,
  ) {}

  async readToken(
    keys: PairKeys,
    rejectedTags: readonly string[],
  ): Promise<{ token: IssuedToken; after?: readonly string[] } | undefined> {
    const entry = await this.attempt(() => this.store.get(keys.token));
    if (!entry || rejectedTags.includes(entry.tag)) return undefined;
    const opened = await this.open(keys, entry, 'token');
    if (!opened || fingerprintOf(opened.token.accessToken) !== entry.tag) {
      this.health.entryProblem('unreadable-entry');
      return undefined;
    }
    this.health.resolved('unreadable-entry');
    return opened;
  }

  /** An entry's content, or `undefined` when it is oversized (never opened) or does not open with the keys here. */
  private open<K extends 'token' | 'failure'>(keys: PairKeys, entry: TokenStoreEntry, kind: K) {
    if (entry.payload.length === 0 || entry.payload.length > this.maxEntryBytes) return undefined;
    return this.codec.open(keys.namespace, entry.payload, kind, entry.version);
  }

  async writeToken(keys: PairKeys, token: IssuedToken, after: readonly string[]): Promise<void> {
    const ttlMs = token.expiresAtMs - this.clock.now();
    if (ttlMs <= 0) return;
    const version = Math.round(token.expiresAtMs);
    const payload = await this.codec.seal(keys.namespace, { kind: 'token', token, after }, version);
    const written = await this.attempt(() =>
      this.store.setIfNewer(keys.token, { version, tag: fingerprintOf(token.accessToken), payload }, ttlMs),
    );
    // Ours replaced whatever was there: the next reader opens it.
    if (written) this.health.resolved('unreadable-entry');
    await this.attempt(() => this.store.deleteIfTagged(keys.failure, 'failure'));
  }

  async writeFailure(keys: PairKeys, error: TokenExchangeError, retryAtMs: number): Promise<void> {
    const ttlMs = retryAtMs - this.clock.now();
    if (ttlMs <= 0) return;
    const version = Math.round(retryAtMs);
    const failure = sharedFailureOf(error, retryAtMs);
    const payload = await this.codec.seal(keys.namespace, { kind: 'failure', failure }, version);
    await this.attempt(() => this.store.setIfNewer(keys.failure, { version, tag: 'failure', payload }, ttlMs));
  }

  async readFailure(keys: PairKeys): Promise<ExchangeOutcome | undefined> {
    const entry = await this.attempt(() => this.store.get(keys.failure));
    const opened = entry && (await this.open(keys, entry, 'failure'));
    if (!opened) return undefined;
    const { failure } = opened;
    const waitMs = failure.retryAtMs - this.clock.now();
    if (waitMs <= 0) return undefined;
    const error = backoffError({ ...failure, attempts: 0, retried: false }, waitMs, true);
    return { ok: false, error, retryAfterMs: waitMs };
  }
}
