import { Inject, Logger, Module, type Provider } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { AssertionSigner } from './token/assertion.signer.js';
import { systemClock, type Clock } from './platform-auth.clock.js';
import {
  LOGGER_CONTEXT,
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_HTTP_SERVICE,
} from './platform-auth.constants.js';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import { ConfigurablePlatformAuthModule, PLATFORM_AUTH_MODULE_OPTIONS } from './platform-auth.module-definition.js';
import { resolvePlatformAuthOptions, type ResolvedPlatformAuthConfig } from './options/options.resolver.js';
import { PlatformHttpHost, PlatformHttpService } from './http/platform-http.service.js';
import { TokenProvider } from './token/token.provider.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';

const providers: Provider[] = [
  {
    provide: PLATFORM_AUTH_CLOCK,
    useFactory: (options: PlatformAuthOptions): Clock => options.clock ?? systemClock,
    inject: [PLATFORM_AUTH_MODULE_OPTIONS],
  },
  {
    provide: PLATFORM_AUTH_CONFIG,
    useFactory: (options: PlatformAuthOptions, clock: Clock): ResolvedPlatformAuthConfig => {
      const config = resolvePlatformAuthOptions(options, clock.now());
      const logger = new Logger(LOGGER_CONTEXT);
      for (const warning of config.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
      return config;
    },
    inject: [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_CLOCK],
  },
  AssertionSigner,
  TokenProvider,
  PlatformAuthInterceptor,
  PlatformHttpHost,
  {
    provide: PlatformHttpService,
    useFactory: (host: PlatformHttpHost): PlatformHttpService => host.httpService,
    inject: [PlatformHttpHost],
  },
  { provide: PLATFORM_AUTH_HTTP_SERVICE, useExisting: PlatformHttpService },
  // For apps that import only this module; where another HttpModule is in scope, inject PlatformHttpService.
  { provide: HttpService, useExisting: PlatformHttpService },
];

/**
 * Authenticates a NestJS app to the platform as a system integration. Configure it with `forRoot(options)` or
 * `forRootAsync(...)`; every credential problem is reported at start-up, all at once. Inject `PlatformHttpService`:
 * its requests to the platform carry a valid bearer token.
 */
@Module({
  providers,
  // Never the resolved configuration: it holds the private key.
  exports: [
    AssertionSigner,
    TokenProvider,
    PlatformAuthInterceptor,
    PlatformHttpService,
    HttpService,
    PLATFORM_AUTH_HTTP_SERVICE,
  ],
})
export class PlatformAuthModule extends ConfigurablePlatformAuthModule {}

/** Injects the module's authenticated `PlatformHttpService` by token (the same instance as injecting the class). */
export const InjectPlatformHttpService = (): ParameterDecorator & PropertyDecorator =>
  Inject(PLATFORM_AUTH_HTTP_SERVICE);
