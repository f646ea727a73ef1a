import type { TokenStore, TokenStoreEntry } from 'nestjs-platform-auth';

/**
 * A `TokenStore` of another engine than Redis, as an application writes one for `tokenStore.instance`: in memory,
 * shared by the replicas of one process. Entries and locks lapse by the time `now` gives (the test's clock).
 */
export class MemoryTokenStore implements TokenStore {
  readonly #entries = new Map<string, { readonly entry: TokenStoreEntry; readonly until: number }>();

  constructor(private readonly now: () => number) {}

  get(key: string): Promise<TokenStoreEntry | undefined> {
    return Promise.resolve(this.#live(key));
  }

  setIfNewer(key: string, entry: TokenStoreEntry, ttlMs: number): Promise<boolean> {
    const stored = this.#live(key);
    if (stored && stored.version >= entry.version) return Promise.resolve(false);
    this.#entries.set(key, { entry, until: this.now() + ttlMs });
    return Promise.resolve(true);
  }

  deleteIfTagged(key: string, tag: string): Promise<boolean> {
    if (this.#live(key)?.tag !== tag) return Promise.resolve(false);
    this.#entries.delete(key);
    return Promise.resolve(true);
  }

  acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    if (this.#live(key)) return Promise.resolve(false);
    this.#entries.set(key, { entry: { version: 0, tag: owner, payload: '' }, until: this.now() + ttlMs });
    return Promise.resolve(true);
  }

  releaseLock(key: string, owner: string): Promise<boolean> {
    return this.deleteIfTagged(key, owner);
  }

  #live(key: string): TokenStoreEntry | undefined {
    const stored = this.#entries.get(key);
    if (stored && stored.until > this.now()) return stored.entry;
    this.#entries.delete(key);
    return undefined;
  }
}
