import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import { settingName } from '../options/config.report.js';
import type { SharedStoreStatus } from '../token/token-status.types.js';
import type { TokenSource } from '../token/token.cache.js';
import { SharedTokenCoordinator, sharedTokenSource } from './shared-token.coordinator.js';
import { TokenStoreCodec, namespaceOf, type NamespaceInput } from './token-store.codec.js';
import type { ResolvedTokenStoreConfig } from './token-store.options.js';
import { RedisTokenStore } from './token-store.redis.js';

/**
 * The shared token store of one integration: the coordinator that wraps the exchange, and the lifecycle of a store
 * the module built from `tokenStoreUrl` (a store passed in stays its owner's).
 */
export class TokenStoreHost {
  private readonly coordinator: SharedTokenCoordinator;
  private readonly owned?: RedisTokenStore;

  constructor(
    settings: ResolvedTokenStoreConfig,
    identity: NamespaceInput,
    clock: Clock,
    private readonly integration: string,
    logger: Pick<LoggerService, 'log' | 'warn'>,
  ) {
    this.owned = settings.store ? undefined : new RedisTokenStore({ url: settings.url! });
    const namespace = namespaceOf(identity);
    this.coordinator = new SharedTokenCoordinator(
      settings.store ?? this.owned!,
      new TokenStoreCodec(settings.keys, namespace),
      settings.keyPrefix,
      namespace,
      clock,
      settings.timing,
      logger,
    );
  }

  /** `source` with the fleet around it (see `sharedTokenSource`). */
  decorate(source: TokenSource): TokenSource {
    return sharedTokenSource(source, this.coordinator);
  }

  /** Connects before the first token is wanted, so a cold fleet shares its first exchange; a store that is down does not hold up start-up. */
  async connect(): Promise<void> {
    await this.owned?.connect().catch((error: Error) => {
      const setting = settingName('tokenStoreUrl', this.integration);
      throw new PlatformAuthConfigError(
        [{ option: 'tokenStoreUrl', setting, message: error.message }],
        this.integration,
      );
    });
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
