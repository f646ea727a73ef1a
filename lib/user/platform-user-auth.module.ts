import { Module, type DynamicModule } from '@nestjs/common';
import { registerBuildClasses, withOtherBuildAliases } from '../platform-auth.builds.js';
import { systemClock, type Clock } from '../platform-auth.clock.js';
import { PLATFORM_USER_AUTH_CLOCK, PLATFORM_USER_AUTH_CONFIG } from './platform-user-auth.constants.js';
import {
  ConfigurablePlatformUserAuthModule,
  PLATFORM_USER_AUTH_MODULE_OPTIONS,
  type PlatformUserAuthModuleAsyncOptions,
  type PlatformUserAuthModuleOptions,
} from './platform-user-auth.module-definition.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';
import { PlatformUserAuth, createPlatformUserAuth } from './platform-user-auth.service.js';
import { PlatformUserGuard } from './platform-user.guard.js';
import { resolveUserAuthOptions, ownUserOptions, type ResolvedUserAuthConfig } from './user-options.resolver.js';
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
      useFactory: (options: PlatformUserAuthOptions): ResolvedUserAuthConfig => resolveUserAuthOptions(options),
      inject: [PLATFORM_USER_AUTH_MODULE_OPTIONS],
    },
    {
      provide: PlatformUserAuth,
      useFactory: createPlatformUserAuth,
      inject: [PLATFORM_USER_AUTH_CONFIG, PLATFORM_USER_AUTH_CLOCK],
    },
    {
      provide: PlatformUserSessions,
      useFactory: createPlatformUserSessions,
      inject: [PLATFORM_USER_AUTH_CONFIG, PLATFORM_USER_AUTH_CLOCK],
    },
    PlatformUserGuard,
  ],
  // Never the resolved configuration: it holds the derived keys.
  exports: [PlatformUserAuth, PlatformUserSessions, PlatformUserGuard, PLATFORM_USER_AUTH_CLOCK],
})
export class PlatformUserAuthModule {
  static forRoot(options: PlatformUserAuthModuleOptions): DynamicModule {
    const definition = { ...ConfigurablePlatformUserAuthModule.forRoot(options), module: PlatformUserAuthModule };
    return withOtherBuildAliases(definition, 'user', injectedByClass);
  }

  /** The same, with the options from a factory, a class or an existing provider (`platformUserAuthConfig.asProvider()`). */
  static forRootAsync(options: PlatformUserAuthModuleAsyncOptions): DynamicModule {
    const definition = { ...ConfigurablePlatformUserAuthModule.forRootAsync(options), module: PlatformUserAuthModule };
    return withOtherBuildAliases(definition, 'user', injectedByClass);
  }
}
