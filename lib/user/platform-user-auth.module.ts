import {
  Inject,
  Logger,
  Module,
  type DynamicModule,
  type FactoryProvider,
  type OnApplicationShutdown,
  type Provider,
} from '@nestjs/common';
import { registerBuildClasses, withOtherBuildAliases } from '../platform-auth.builds.js';
import { systemClock, type Clock } from '../platform-auth.clock.js';
import {
  PLATFORM_USER_AUTH_CLOCK,
  PLATFORM_USER_AUTH_CONFIG,
  PLATFORM_USER_ENDED_SESSIONS,
} from './platform-user-auth.constants.js';
import {
  ConfigurablePlatformUserAuthModule,
  PLATFORM_USER_AUTH_MODULE_OPTIONS,
  type PlatformUserAuthModuleAsyncOptions,
  type PlatformUserAuthModuleOptions,
} from './platform-user-auth.module-definition.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';
import { PlatformUserAuth, createPlatformUserAuth } from './platform-user-auth.service.js';
import { PlatformUserGuard } from './platform-user.guard.js';
import {
  forgetUserSecrets,
  resolveUserAuthOptions,
  ownUserOptions,
  type ResolvedUserAuthConfig,
} from './user-options.resolver.js';
import { EndedSessions } from './user-session.ended.js';
import { PlatformUserSessions, createPlatformUserSessions } from './user-session.service.js';

/** The services apps inject by class, under this build's classes and (see platform-auth.builds.ts) the other's. */
const injectedByClass = { PlatformUserAuth, PlatformUserSessions, PlatformUserGuard };
registerBuildClasses('user', injectedByClass);

/**
 * User sign-in with the Authorization Code flow and PKCE. Configure with `forRoot(options)` or
 * `forRootAsync(platformUserAuthConfig.asProvider())`; every configuration problem is reported at start-up.
 * Independent of `PlatformAuthModule`: an app may use either or both.
 */
@Module({
  providers: [
    {
      provide: PLATFORM_USER_AUTH_CLOCK,
      useFactory: (options: PlatformUserAuthOptions): Clock => ownUserOptions(options).clock ?? systemClock,
      inject: [PLATFORM_USER_AUTH_MODULE_OPTIONS],
    },
    {
      provide: PLATFORM_USER_AUTH_CONFIG,
      useFactory: async (options: PlatformUserAuthOptions, clock: Clock): Promise<ResolvedUserAuthConfig> => {
        try {
          const config = await resolveUserAuthOptions(options, clock.now());
          const logger = new Logger('PlatformUserAuth');
          for (const warning of config.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
          return config;
        } finally {
          // The options provider holds the module's own copy (`withOwnedOptions`): once the keys are derived and the
          // client key opened, the state secret, client secret, passphrase and PEM text leave the container.
          forgetUserSecrets(options);
        }
      },
      inject: [PLATFORM_USER_AUTH_MODULE_OPTIONS, PLATFORM_USER_AUTH_CLOCK],
    },
    {
      provide: PLATFORM_USER_ENDED_SESSIONS,
      useFactory: (clock: Clock) => new EndedSessions(clock),
      inject: [PLATFORM_USER_AUTH_CLOCK],
    },
    {
      provide: PlatformUserAuth,
      useFactory: createPlatformUserAuth,
      inject: [PLATFORM_USER_AUTH_CONFIG, PLATFORM_USER_AUTH_CLOCK, PLATFORM_USER_ENDED_SESSIONS],
    },
    {
      provide: PlatformUserSessions,
      useFactory: createPlatformUserSessions,
      inject: [PLATFORM_USER_AUTH_CONFIG, PLATFORM_USER_AUTH_CLOCK, PLATFORM_USER_ENDED_SESSIONS],
    },
    PlatformUserGuard,
  ],
  // Never the resolved configuration: it holds the derived keys.
  exports: [PlatformUserAuth, PlatformUserSessions, PlatformUserGuard, PLATFORM_USER_AUTH_CLOCK],
})
export class PlatformUserAuthModule implements OnApplicationShutdown {
  constructor(
    // Only what shutdown needs, so no internal type shows in the public declaration.
    @Inject(PLATFORM_USER_AUTH_CONFIG) private readonly config: { readonly clientKey?: { close(): Promise<void> } },
  ) {}

  /** Releases the `private_key_jwt` key (its PKCS#11 sessions). */
  async onApplicationShutdown(): Promise<void> {
    await this.config.clientKey?.close();
  }

  static forRoot(options: PlatformUserAuthModuleOptions): DynamicModule {
    const definition = withOwnedUserOptions({
      ...ConfigurablePlatformUserAuthModule.forRoot(options),
      module: PlatformUserAuthModule,
    });
    return withOtherBuildAliases(definition, 'user', injectedByClass);
  }

  /** The same, with the options from a factory, a class or an existing provider (`platformUserAuthConfig.asProvider()`). */
  static forRootAsync(options: PlatformUserAuthModuleAsyncOptions): DynamicModule {
    const definition = withOwnedUserOptions({
      ...ConfigurablePlatformUserAuthModule.forRootAsync(options),
      module: PlatformUserAuthModule,
    });
    return withOtherBuildAliases(definition, 'user', injectedByClass);
  }
}

/**
 * The options provider gets a copy of the caller's options (own properties only), never the caller's object: the
 * copy loses its secrets and PEM text after start-up, and the caller's object stays intact for reuse.
 */
function withOwnedUserOptions(definition: DynamicModule): DynamicModule {
  const providers = definition.providers?.map((provider): Provider => {
    if (typeof provider !== 'object' || provider.provide !== PLATFORM_USER_AUTH_MODULE_OPTIONS) return provider;
    if ('useValue' in provider)
      return { provide: PLATFORM_USER_AUTH_MODULE_OPTIONS, useValue: ownUserOptions(provider.useValue) };
    if ('useFactory' in provider) {
      const { useFactory, inject } = provider as FactoryProvider<unknown>;
      return {
        provide: PLATFORM_USER_AUTH_MODULE_OPTIONS,
        useFactory: async (...args: unknown[]) => ownUserOptions(await useFactory(...args)),
        inject,
      };
    }
    return provider;
  });
  return { ...definition, providers };
}
