import type { TokenStore, TokenStoreEntry } from './token-store.interface.js';

/**
 * The part of a Redis client this store uses: node-redis (v4 to v6) clients have it as they are. For ioredis pass
 * `{ sendCommand: (args) => redis.call(args[0], ...args.slice(1)) }`.
 */
export interface RedisCommandClient {
  sendCommand(args: string[]): Promise<unknown>;
}

export interface RedisTokenStoreOptions {
  /** `redis://` or `rediss://` (TLS) URL; the store then owns its own node-redis client (the `redis` package). */
  url?: string;
  /** An existing client instead of `url`; its connection stays yours (connect it, close it). */
  client?: RedisCommandClient;
  /** Connection timeout of a client made from `url`. Default 1,000 ms. */
  connectTimeoutMs?: number;
}

/** The slice of node-redis's `createClient` used for a client made from a URL. */
interface OwnedRedisClient extends RedisCommandClient {
  readonly isOpen: boolean;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  connect(): Promise<unknown>;
  destroy(): void;
}

interface RedisModule {
  createClient(
    this: void,
    options: {
      url: string;
      disableOfflineQueue: boolean;
      socket: { connectTimeout: number; reconnectStrategy: false };
    },
  ): OwnedRedisClient;
}

/** Entries are `<version>:<tag>:<payload>`; a lock is an entry with an empty payload, so one script releases both. */
const ENTRY = /^(\d+):([^:]*):(.*)$/s;

const SET_IF_NEWER = `
local current = redis.call('GET', KEYS[1])
if current then
  local version = tonumber(string.match(current, '^(%d+):'))
  if version and version >= tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

const DELETE_IF_TAGGED = `
local current = redis.call('GET', KEYS[1])
if current and string.match(current, '^%d+:([^:]*):') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * `TokenStore` on Redis (standalone, Sentinel or Cluster: every key an integration uses carries one hash tag). The
 * conditional writes and compare-and-delete are Lua scripts, so each is one atomic round trip.
 *
 * Built from a URL it loads the optional `redis` package on first use and connects on demand; while Redis is
 * unreachable operations fail at once (no offline queue, no queued reconnect), so callers fall back without waiting.
 */
export class RedisTokenStore implements TokenStore {
  private connection?: Promise<OwnedRedisClient>;
  private owned?: OwnedRedisClient;
  private redisModule?: Promise<RedisModule>;
  private closed = false;

  constructor(private readonly options: RedisTokenStoreOptions) {
    if ((options.url === undefined) === (options.client === undefined)) {
      throw new TypeError('RedisTokenStore: pass exactly one of url and client');
    }
    if (options.url !== undefined && !/^rediss?:\/\//i.test(options.url)) {
      throw new TypeError('RedisTokenStore: url must start with redis:// or rediss://');
    }
  }

  /**
   * Connects (a client made from `url`) and resolves once the attempt succeeded or failed: a store that is down is
   * a state the module works through. It rejects only when the `redis` package is not installed, a set-up mistake.
   */
  async connect(): Promise<void> {
    if (this.options.url !== undefined) await this.loadRedis();
    await this.client().catch(() => undefined);
  }

  async get(key: string): Promise<TokenStoreEntry | undefined> {
    const value = await this.command(['GET', key]);
    const match = typeof value === 'string' ? ENTRY.exec(value) : null;
    if (!match || match[3] === '') return undefined;
    return { version: Number(match[1]), tag: match[2], payload: match[3] };
  }

  async setIfNewer(key: string, entry: TokenStoreEntry, ttlMs: number): Promise<boolean> {
    const reply = await this.command([
      'EVAL',
      SET_IF_NEWER,
      '1',
      key,
      String(entry.version),
      encode(entry),
      String(Math.max(1, Math.ceil(ttlMs))),
    ]);
    return reply === 1;
  }

  async deleteIfTagged(key: string, tag: string): Promise<boolean> {
    return (await this.command(['EVAL', DELETE_IF_TAGGED, '1', key, tag])) === 1;
  }

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const value = encode({ version: 0, tag: owner, payload: '' });
    const reply = await this.command(['SET', key, value, 'NX', 'PX', String(Math.max(1, Math.ceil(ttlMs)))]);
    return reply === 'OK';
  }

  releaseLock(key: string, owner: string): Promise<boolean> {
    return this.deleteIfTagged(key, owner);
  }

  /** Closes a client this store made from `url`; a client passed in is left to its owner. */
  async close(): Promise<void> {
    this.closed = true;
    this.drop(this.owned);
  }

  private async command(args: string[]): Promise<unknown> {
    const client = await this.client();
    try {
      return await client.sendCommand(args);
    } catch (error) {
      // A connection that closed without an 'error' event is just as dead.
      if (client === this.owned && !this.owned.isOpen) this.drop(this.owned);
      throw error;
    }
  }

  private client(): Promise<RedisCommandClient> {
    if (this.closed) return Promise.reject(new Error('RedisTokenStore is closed'));
    if (this.options.client) return Promise.resolve(this.options.client);
    this.connection ??= this.connectOwned();
    return this.connection;
  }

  /**
   * A connected client, made on demand. It does not reconnect by itself: once its connection fails it is dropped,
   * and the next operation makes a new one. So no reconnect timer outlives `close()`, and a Redis that comes back
   * is found on the next operation (the module asks again a second after a failure).
   */
  private async connectOwned(): Promise<OwnedRedisClient> {
    const { createClient } = await this.loadRedis();
    const client = createClient({
      url: this.options.url!,
      disableOfflineQueue: true,
      socket: { connectTimeout: this.options.connectTimeoutMs ?? 1_000, reconnectStrategy: false },
    });
    this.owned = client;
    // Connection errors surface as failed operations, which the module reports once per state change; without a
    // listener node-redis would throw them as an unhandled 'error' event.
    client.on('error', () => this.drop(client));
    try {
      await client.connect();
    } catch (error) {
      this.drop(client);
      throw error;
    }
    if (this.closed) this.drop(client);
    return client;
  }

  private loadRedis(): Promise<RedisModule> {
    this.redisModule ??= (import('redis') as Promise<unknown> as Promise<RedisModule>).catch(() => {
      this.redisModule = undefined;
      throw new Error('RedisTokenStore needs the `redis` package (node-redis 4 to 6): npm install redis');
    });
    return this.redisModule;
  }

  private drop(client: OwnedRedisClient | undefined): void {
    if (!client || client !== this.owned) return;
    this.owned = undefined;
    this.connection = undefined;
    try {
      client.destroy();
    } catch {
      // Already closed by its own failure: nothing left to release.
    }
  }
}

function encode(entry: TokenStoreEntry): string {
  if (!Number.isSafeInteger(entry.version) || entry.version < 0) throw new TypeError('version must be a whole number');
  if (entry.tag.includes(':')) throw new TypeError('tag must not contain ":"');
  return `${entry.version}:${entry.tag}:${entry.payload}`;
}
