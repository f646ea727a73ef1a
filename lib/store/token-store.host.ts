import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { settingName } from '../options/config.report.js';
import type { SharedStoreStatus } from '../token/token-status.types.js';
import type { TokenSource } from '../token/token.cache.js';
import { SharedTokenCoordinator } from './shared-token.coordinator.js';
import { storeKeyBase } from './shared-token.entries.js';
import { sharedTokenSource } from './shared-token.source.js';
import { TokenStoreCodec } from './token-store.codec.js';
import { StoreNamespaces, type HeldPairs, type NamespaceInput } from './store-namespaces.js';
import type { ResolvedTokenStoreConfig } from './token-store.options.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, RedisEntryStore } from './token-store.redis.js';
import { OwnedRedisChannel, type RedisChannel } from './redis.channel.js';
import type { SendCommand } from './redis-client.factory.js';

/** The store's Redis for other parts of the integration that keep shared state in it (the rate limit's bucket). */
interface SharedScriptChannel {
  readonly send: SendCommand;
  /**
   * `<keyPrefix>{<namespace>}`, the base of the keys the calls of this replica share (one Cluster slot): the
   * namespace of the pair that minted the token in use, so replicas that share a token share its rate bucket, and
   * nobody without that pair's key does. Read at each use: it follows the token across a rotation.
   */
  readonly keyBase: string;
  readonly operationTimeoutMs: number;
}

/** The option that configured the store's connection, for the message when the `redis` package is missing. */
const MODE_OPTION = {
  standalone: 'tokenStore.url',
  cluster: 'tokenStore.clusterNodes',
  sentinel: 'tokenStore.sentinel.nodes',
} as const;

interface TokenStoreHostInput {
  readonly settings: ResolvedTokenStoreConfig;
  readonly identity: NamespaceInput;
  /** The pairs this replica holds (the credential lifecycle): they own its entries. */
  readonly pairs: HeldPairs;
  readonly clock: Clock;
  readonly integration: string;
  readonly logger: Pick<LoggerService, 'log' | 'warn'>;
  /** Told the outcome of every attempt to take the lock (the `store:lock` event and metric). */
  readonly observer: Pick<PlatformAuthObserver, 'storeLock'>;
}

/**
 * The shared token store of one integration: the coordinator that wraps the exchange, and the lifecycle of the Redis
 * connection the module made from its settings (a store passed in stays its owner's).
 */
export class TokenStoreHost {
  private readonly coordinator: SharedTokenCoordinator;
  private readonly owned?: RedisEntryStore;
  private readonly integration: string;
  private readonly mode: SharedStoreStatus['mode'];
  /** Absent for a `TokenStore` of the application's own: the module cannot run a script on it. */
  readonly scripts?: SharedScriptChannel;

  private readonly namespaces: StoreNamespaces;
  /** The namespace of the pair in use when it was last worked out: the rate bucket's before any token is in use. */
  private activeNamespace?: string;

  constructor({ settings, identity, pairs, clock, integration, logger, observer }: TokenStoreHostInput) {
    this.integration = integration;
    const { connection } = settings;
    this.mode = connection?.mode ?? 'provided';
    // One connection per integration: the token's entries and any script of the module's own go through it. A store
    // on the application's client or on a connection shared by tenants lends its channel for the scripts too.
    const owns = connection !== undefined && !settings.store;
    const channel: RedisChannel | undefined = owns
      ? new OwnedRedisChannel(connection, DEFAULT_CONNECT_TIMEOUT_MS, settings.timing.operationTimeoutMs)
      : settings.store instanceof RedisEntryStore
        ? settings.store.channel
        : undefined;
    this.owned = owns ? new RedisEntryStore(channel!, settings.maxEntryBytes) : undefined;
    this.namespaces = new StoreNamespaces(identity, pairs);
    // Until this replica has worked out a namespace, a key base nobody else has: it shares nothing rather than guess.
    const unshared = `unshared-${randomUUID()}`;
    const keyBase = () =>
      storeKeyBase(settings.keyPrefix, this.coordinator.namespaceInUse ?? this.activeNamespace ?? unshared);
    this.scripts = channel && {
      send: channel.send,
      get keyBase() {
        return keyBase();
      },
      operationTimeoutMs: settings.timing.operationTimeoutMs,
    };
    this.coordinator = new SharedTokenCoordinator(
      settings.store ?? this.owned!,
      new TokenStoreCodec(settings.keys),
      settings.keyPrefix,
      this.namespaces,
      { clock, timing: settings.timing, logger, observer, maxEntryBytes: settings.maxEntryBytes, mode: this.mode },
    );
  }

  /** `source` with the fleet around it (see `sharedTokenSource`). */
  decorate(source: TokenSource): TokenSource {
    return sharedTokenSource(source, this.coordinator);
  }

  /** Connects before the first token is wanted, so a cold fleet shares its first exchange; a store that is down does not hold up start-up. */
  async connect(): Promise<void> {
    await this.owned?.connect().catch((error: Error) => {
      const option = MODE_OPTION[this.mode as keyof typeof MODE_OPTION];
      const setting = settingName(option, this.integration);
      throw new PlatformAuthConfigError([{ option, setting, message: error.message }], this.integration);
    });
    // The key signs once here, at start-up, rather than on the first call; a key that cannot sign now says so then.
    this.activeNamespace = await this.namespaces.active().catch(() => undefined);
  }

  status(): SharedStoreStatus {
    return this.coordinator.status();
  }

  /** With the token provider's own shutdown (an exchange still in flight may not use the store any more). */
  async close(): Promise<void> {
    this.coordinator.close();
    await this.owned?.close();
  }
}
