import { ConfigReport } from '../options/config.report.js';
import { readOptions } from '../options/options.read.js';
import type { ResolvedPlatformAuthConfig } from '../platform-auth.configuration.js';
import { connectionSettings } from '../store/redis-connection.options.js';
import { OwnedRedisChannel } from '../store/redis.channel.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, RedisEntryStore } from '../store/token-store.redis.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';

/**
 * The registry's one connection to the Redis its shared settings name, used by every tenant that does not name a
 * Redis of its own: a connection per tenant would open a socket (two, with the bounded reader) for each of up to
 * `maxResident` tenants on every replica. Each tenant's store settings keep their connection's, with this one as the
 * store, which stays its owner's, so evicting a tenant never closes it; the registry closes it at shutdown.
 */
export class TenantStoreConnection {
  #store?: RedisEntryStore;
  #connected?: Promise<void>;
  #closed = false;

  /**
   * `config` with its store on the shared connection, when its connection came from the registry's settings. The
   * first tenant that needs it makes it, from its own resolved settings: those are the registry's, as it names no
   * Redis of its own. Connected before the tenant's first token is wanted, as a connection of its own would be, so
   * a cold fleet shares that first exchange.
   */
  async adopt(config: ResolvedPlatformAuthConfig, own: PlatformAuthOptions): Promise<ResolvedPlatformAuthConfig> {
    const settings = config.tokenStore;
    if (!settings?.connection || this.#closed || namesOwnRedis(own)) return config;
    if (!this.#store) {
      this.#store = new RedisEntryStore(
        new OwnedRedisChannel(settings.connection, DEFAULT_CONNECT_TIMEOUT_MS, settings.timing.operationTimeoutMs),
        settings.maxEntryBytes,
      );
      this.#connected = this.#store.connect();
    }
    try {
      await this.#connected;
    } catch {
      // The `redis` package is missing: the tenant's own connection reports that as a configuration error.
      return config;
    }
    return { ...config, tokenStore: { ...settings, store: this.#store } };
  }

  /** After every tenant stopped: no tenant may use it any more. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#store?.close();
  }
}

/** Whether the tenant's own settings shape a connection (a Redis, a user, TLS files) rather than take the registry's. */
function namesOwnRedis(own: PlatformAuthOptions): boolean {
  // Only read for which settings are given: the tenant's whole configuration is checked when it is built.
  return connectionSettings(readOptions(own, new ConfigReport()).tokenStore).length > 0;
}
