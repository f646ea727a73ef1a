import { Inject, Logger, Module, type Provider } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { AssertionSigner } from './assertion.signer.js';
import { systemClock, type Clock } from './clock.js';
import {
  LOGGER_CONTEXT,
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_HTTP_SERVICE,
} from './platform-auth.constants.js';
import { PlatformAuthInterceptor } from './platform-auth.interceptor.js';
import { ConfigurablePlatformAuthModule, PLATFORM_AUTH_MODULE_OPTIONS } from './platform-auth.module-definition.js';
import { resolvePlatformAuthOptions, type ResolvedPlatformAuthConfig } from './platform-auth.options-resolver.js';
import { PlatformHttpHost } from './platform-http.host.js';
import { TokenProvider } from './token.provider.js';
import type { PlatformAuthOptions } from './interfaces/platform-auth-options.interface.js';

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
    provide: PLATFORM_AUTH_HTTP_SERVICE,
    useFactory: (host: PlatformHttpHost): HttpService => host.httpService,
    inject: [PlatformHttpHost],
  },
  { provide: HttpService, useExisting: PLATFORM_AUTH_HTTP_SERVICE },
];

/**
 * Authenticates a NestJS app to the platform as a system integration. Configure it with `forRoot(options)` or
 * `forRootAsync(...)`; every credential problem is reported at start-up, all at once. Inject the exported
 * `HttpService`: its requests to the platform carry a valid bearer token.
 */
@Module({
  providers,
  exports: [
    AssertionSigner,
    TokenProvider,
    PlatformAuthInterceptor,
    HttpService,
    PLATFORM_AUTH_HTTP_SERVICE,
    PLATFORM_AUTH_CONFIG,
    PLATFORM_AUTH_CLOCK,
  ],
})
export class PlatformAuthModule extends ConfigurablePlatformAuthModule {}

/** Injects the module's authenticated `HttpService`; useful where another `HttpModule` is also in scope. */
export const InjectPlatformHttpService = (): ParameterDecorator & PropertyDecorator => Inject(PLATFORM_AUTH_HTTP_SERVICE);
