import { Inject, Logger, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { withOwnedOptions } from '../platform-auth.module-helpers.js';
import {
  CONFIGURATION_REPORTER,
  PlatformAuthStartupModule,
  StartupProblems,
  reporterProvider,
  type Reporter,
} from '../platform-auth.startup-problems.js';
import { systemClock, type Clock } from '../platform-auth.clock.js';
import {
  PLATFORM_USER_AUTH_CLOCK,
  PLATFORM_USER_AUTH_CONFIG,
  PLATFORM_USER_AUTH_RUNTIME,
  PLATFORM_USER_AUTH_TOKEN,
  PLATFORM_USER_SESSIONS_TOKEN,
} from './platform-user-auth.constants.js';
import {
  ConfigurablePlatformUserAuthModule,
  PLATFORM_USER_AUTH_MODULE_OPTIONS,
  type PlatformUserAuthModuleAsyncOptions,
  type PlatformUserAuthModuleOptions,
} from './platform-user-auth.module-definition.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';
import { PlatformUserAuth } from './platform-user-auth.service.js';
import { PlatformUserAuthRuntime } from './platform-user-auth.wiring.js';
import { PlatformUserGuard } from './platform-user.guard.js';
import {
  forgetUserSecrets,
  resolveUserAuthOptions,
  ownUserOptions,
  type ResolvedUserAuthConfig,
} from './user-options.resolver.js';
import { PlatformUserSessions } from './user-session.service.js';

/**
 * User sign-in with the Authorization Code flow and PKCE. Configure with `forRoot(options)` or
 * `forRootAsync(platformUserAuthConfig.asProvider())`; every configuration problem is reported at start-up, with
 * those of the application's `PlatformAuthModule`s. Independent of `PlatformAuthModule`: an app may use either or both.
 */
@Module({
  imports: [PlatformAuthStartupModule],
  providers: [
    reporterProvider('PlatformUserAuthModule', PLATFORM_USER_AUTH_MODULE_OPTIONS),
    {
      provide: PLATFORM_USER_AUTH_CLOCK,
      useFactory: (options: PlatformUserAuthOptions): Clock => ownUserOptions(options).clock ?? systemClock,
      inject: [PLATFORM_USER_AUTH_MODULE_OPTIONS],
    },
    {
      provide: PLATFORM_USER_AUTH_CONFIG,
      useFactory: async (
        options: PlatformUserAuthOptions,
        clock: Clock,
        problems: StartupProblems,
        reporter: Reporter,
      ): Promise<ResolvedUserAuthConfig> => {
        try {
          const config = await resolveUserAuthOptions(options, clock.now(), problems.environment());
          const logger = new Logger('PlatformUserAuth');
          for (const warning of config.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
          await problems.settle(reporter);
          return config;
        } catch (error) {
          await problems.settle(reporter, error);
          throw error;
        } finally {
          // The options provider holds the module's own copy (`withOwnedOptions`): once the keys are derived and the
          // client key opened, the state secret, client secret, passphrase and PEM text leave the container.
          forgetUserSecrets(options);
        }
      },
      inject: [PLATFORM_USER_AUTH_MODULE_OPTIONS, PLATFORM_USER_AUTH_CLOCK, StartupProblems, CONFIGURATION_REPORTER],
    },
    {
      provide: PLATFORM_USER_AUTH_RUNTIME,
      useFactory: (config: ResolvedUserAuthConfig, clock: Clock) => new PlatformUserAuthRuntime(config, clock),
      inject: [PLATFORM_USER_AUTH_CONFIG, PLATFORM_USER_AUTH_CLOCK],
    },
    {
      provide: PlatformUserAuth,
      useFactory: (runtime: PlatformUserAuthRuntime) => runtime.auth,
      inject: [PLATFORM_USER_AUTH_RUNTIME],
    },
    {
      provide: PlatformUserSessions,
      useFactory: (runtime: PlatformUserAuthRuntime) => runtime.sessions,
      inject: [PLATFORM_USER_AUTH_RUNTIME],
    },
    PlatformUserGuard,
    // Under shared tokens too, which a class written against either build of the package finds.
    { provide: PLATFORM_USER_AUTH_TOKEN, useExisting: PlatformUserAuth },
    { provide: PLATFORM_USER_SESSIONS_TOKEN, useExisting: PlatformUserSessions },
  ],
  // Never the resolved configuration: it holds the derived keys.
  exports: [
    PlatformUserAuth,
    PlatformUserSessions,
    PlatformUserGuard,
    PLATFORM_USER_AUTH_CLOCK,
    PLATFORM_USER_AUTH_TOKEN,
    PLATFORM_USER_SESSIONS_TOKEN,
  ],
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
    return ownedUserOptions({ ...ConfigurablePlatformUserAuthModule.forRoot(options), module: PlatformUserAuthModule });
  }

  /** The same, with the options from a factory, a class or an existing provider (`platformUserAuthConfig.asProvider()`). */
  static forRootAsync(options: PlatformUserAuthModuleAsyncOptions): DynamicModule {
    return ownedUserOptions({
      ...ConfigurablePlatformUserAuthModule.forRootAsync(options),
      module: PlatformUserAuthModule,
    });
  }
}

/** Injects `PlatformUserAuth`; the same as injecting it by class, and also from a class of the package's other build. */
export const InjectPlatformUserAuth = (): ParameterDecorator & PropertyDecorator => Inject(PLATFORM_USER_AUTH_TOKEN);

/** Injects `PlatformUserSessions`; the same as by class, and also from a class of the package's other build. */
export const InjectPlatformUserSessions = (): ParameterDecorator & PropertyDecorator =>
  Inject(PLATFORM_USER_SESSIONS_TOKEN);

/** The options provider gets the module's own copy of the options (see `withOwnedOptions`, `ownUserOptions`). */
const ownedUserOptions = (definition: DynamicModule): DynamicModule =>
  withOwnedOptions(definition, PLATFORM_USER_AUTH_MODULE_OPTIONS, ownUserOptions);
