import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type LoggerService,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import {
  LOGGER_CONTEXT,
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_INTEGRATION,
  PLATFORM_AUTH_LOGGER,
} from '../platform-auth.constants.js';
import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import { settingName } from '../options/config.report.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { SharedTokenCoordinator } from './shared-token.coordinator.js';
import { TokenStoreCodec, namespaceOf } from './token-store.codec.js';
import { RedisTokenStore } from './token-store.redis.js';

/**
 * The module's link to the shared token store, when one is configured: the coordinator the token provider asks,
 * and the lifecycle of a store the module built from `tokenStoreUrl` (a store passed in stays its owner's).
 */
@Injectable()
export class TokenStoreHost implements OnModuleInit, OnApplicationShutdown {
  /** `undefined` without a store: the provider then exchanges exactly as it always did. */
  readonly coordinator?: SharedTokenCoordinator;
  private readonly owned?: RedisTokenStore;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig,
    @Inject(PLATFORM_AUTH_CLOCK) clock: Clock,
    @Inject(PLATFORM_AUTH_INTEGRATION) private readonly integration: string,
    @Optional() @Inject(PLATFORM_AUTH_LOGGER) logger: LoggerService = new Logger(LOGGER_CONTEXT),
  ) {
    const settings = config.tokenStore;
    if (!settings) return;
    this.owned = settings.store ? undefined : new RedisTokenStore({ url: settings.url! });
    const namespace = namespaceOf({
      tokenUrl: config.tokenUrl,
      audience: config.audience,
      machineId: config.machineId,
      thumbprint: config.credentials.thumbprint,
    });
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

  /** Connects before the first token is wanted, so a cold fleet shares its first exchange; a store that is down does not hold up start-up. */
  async onModuleInit(): Promise<void> {
    await this.owned?.connect().catch((error: Error) => {
      const setting = settingName('tokenStoreUrl', this.integration);
      throw new PlatformAuthConfigError(
        [{ option: 'tokenStoreUrl', setting, message: error.message }],
        this.integration,
      );
    });
  }

  /** With the token provider's own shutdown (an exchange still in flight may not use the store any more). */
  async onApplicationShutdown(): Promise<void> {
    this.coordinator?.close();
    await this.owned?.close();
  }
}
