// The options name a store, so its shape lives with the options (the lowest layer that needs it); the store layer
// implements it.
/**
 * One value in a `TokenStore`. The module seals `payload` (AES-256-GCM) before it reaches the store, so an engine
 * only ever holds ciphertext; `version` and `tag` stay readable because the engine's conditional operations compare
 * them without decrypting anything.
 */
export interface TokenStoreEntry {
  /** Orders writes: a write whose version is not greater than the stored one is refused. A whole number. */
  readonly version: number;
  /** Compared by `deleteIfTagged`: a hash of the token for token entries, the owner's id for locks. No `:` in it. */
  readonly tag: string;
  /** Opaque text (a compact JWE), stored and returned verbatim. */
  readonly payload: string;
}

/**
 * A shared store that lets replicas of a service use one access token. Every operation is atomic in the engine, so
 * a fleet of replicas can coordinate through it; keys are chosen by the module (an integration's keys share one
 * prefix and, for Redis Cluster, one hash slot). Implement it for another engine when Redis is not an option:
 * five operations, each a single round trip in most engines.
 *
 * Operations may reject or be slow: the module bounds each one with a short timeout and falls back to exchanging
 * tokens locally, so an implementation needs no retry logic of its own.
 */
export interface TokenStore {
  /** The entry stored under `key`, or `undefined` when there is none (or it expired). */
  get(key: string): Promise<TokenStoreEntry | undefined>;
  /**
   * Stores `entry` under `key` for `ttlMs` — only if there is no entry or the stored one has a smaller `version`.
   * Resolves whether it was written. A writer whose view is stale can therefore never replace a newer token.
   */
  setIfNewer(key: string, entry: TokenStoreEntry, ttlMs: number): Promise<boolean>;
  /** Deletes the entry under `key` only if its `tag` is `tag` (compare-and-delete). Resolves whether it deleted. */
  deleteIfTagged(key: string, tag: string): Promise<boolean>;
  /** Takes the lock `key` for `owner` unless someone holds it (`SET NX PX`); it lapses after `ttlMs` by itself. */
  acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases the lock `key` only if `owner` still holds it (a lapsed and re-taken lock is left alone). */
  releaseLock(key: string, owner: string): Promise<boolean>;
}
