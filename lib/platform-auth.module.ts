import {
  Logger,
  Module,
  type DynamicModule,
  type FactoryProvider,
  type LoggerService,
  type Provider,
} from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { AssertionSigner } from './token/assertion.signer.js';
import { systemClock, type Clock } from './platform-auth.clock.js';
import {
  LOGGER_CONTEXT,
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_HTTP_SERVICE,
  PLATFORM_AUTH_INTEGRATION,
  PLATFORM_AUTH_LOGGER,
} from './platform-auth.constants.js';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import {
  ConfigurablePlatformAuthModule,
  PLATFORM_AUTH_MODULE_OPTIONS,
  type PlatformAuthModuleAsyncOptions,
  type PlatformAuthModuleOptions,
} from './platform-auth.module-definition.js';
import { DEFAULT_INTEGRATION, integrationName } from './options/integration-name.util.js';
import { forgetCredentialText, ownOptions } from './options/own-options.util.js';
import { namedServiceTokens, registerIntegrationName } from './platform-auth.integrations.js';
import { resolvePlatformAuthOptions, type ResolvedPlatformAuthConfig } from './options/options.resolver.js';
import { PlatformHttpHost, PlatformHttpService } from './http/platform-http.service.js';
import { TokenProvider } from './token/token.provider.js';
import { TokenStoreHost } from './store/token-store.host.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import { CredentialsHolder } from './credentials/credentials.holder.js';
import { CredentialsWatch } from './credentials/credentials.watch.js';
import { PlatformAuthTelemetry } from './telemetry/telemetry.service.js';
import { integrationHash } from './telemetry/telemetry.events.js';
import { registerBuildClasses, withOtherBuildAliases } from './platform-auth.builds.js';

const providers: Provider[] = [
  {
    provide: PLATFORM_AUTH_CLOCK,
    useFactory: (options: PlatformAuthOptions): Clock => ownOptions(options).clock ?? systemClock,
    inject: [PLATFORM_AUTH_MODULE_OPTIONS],
  },
  {
    provide: PLATFORM_AUTH_LOGGER,
    // A named integration's lines say which integration they are about.
    useFactory: (options: PlatformAuthOptions, integration: string): LoggerService =>
      ownOptions(options).logger ??
      new Logger(integration === DEFAULT_INTEGRATION ? LOGGER_CONTEXT : `${LOGGER_CONTEXT}:${integration}`),
    inject: [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_INTEGRATION],
  },
  {
    provide: PLATFORM_AUTH_CONFIG,
    useFactory: (
      options: PlatformAuthOptions,
      clock: Clock,
      integration: string,
      logger: LoggerService,
    ): ResolvedPlatformAuthConfig => {
      let config: ResolvedPlatformAuthConfig;
      try {
        config = resolvePlatformAuthOptions(options, clock.now(), integration);
      } finally {
        // The options provider holds the module's own copy (see `withOwnedOptions`): once the key is parsed into a
        // KeyObject, its text and the passphrase have no business staying in the container.
        forgetCredentialText(options);
      }
      for (const warning of config.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
      return config;
    },
    inject: [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_CLOCK, PLATFORM_AUTH_INTEGRATION, PLATFORM_AUTH_LOGGER],
  },
  {
    provide: CredentialsHolder,
    useFactory: (config: ResolvedPlatformAuthConfig, clock: Clock): CredentialsHolder =>
      new CredentialsHolder(config.machineId, config.credentials, clock.now()),
    inject: [PLATFORM_AUTH_CONFIG, PLATFORM_AUTH_CLOCK],
  },
  {
    provide: PlatformAuthTelemetry,
    useFactory: (config: ResolvedPlatformAuthConfig, clock: Clock, name: string): Promise<PlatformAuthTelemetry> =>
      PlatformAuthTelemetry.load(
        integrationHash(config.tokenUrl, config.machineId),
        clock,
        name === DEFAULT_INTEGRATION ? undefined : name,
      ),
    inject: [PLATFORM_AUTH_CONFIG, PLATFORM_AUTH_CLOCK, PLATFORM_AUTH_INTEGRATION],
  },
  CredentialsWatch,
  AssertionSigner,
  TokenStoreHost,
  TokenProvider,
  PlatformAuthInterceptor,
  PlatformHttpHost,
  {
    provide: PlatformHttpService,
    useFactory: (host: PlatformHttpHost): PlatformHttpService => host.httpService,
    inject: [PlatformHttpHost],
  },
];

/** The services apps inject by class, under this build's classes and (see platform-auth.builds.ts) the other's. */
const injectedByClass = { AssertionSigner, TokenProvider, PlatformAuthInterceptor, PlatformHttpService };
registerBuildClasses('platform-auth', injectedByClass);

/** What the default integration exports: its services by class, as apps with one integration inject them. */
const defaultExports = [
  AssertionSigner,
  TokenProvider,
  PlatformAuthInterceptor,
  PlatformHttpService,
  HttpService,
  PLATFORM_AUTH_HTTP_SERVICE,
];
const defaultAliases: Provider[] = [
  { provide: PLATFORM_AUTH_HTTP_SERVICE, useExisting: PlatformHttpService },
  // For apps that import only this module; where another HttpModule is in scope, inject PlatformHttpService.
  { provide: HttpService, useExisting: PlatformHttpService },
];

/**
 * Completes the builder's definition for one integration. Every module instance holds its own providers; the
 * default one exports them by class, a named one only under its own tokens, so integrations never shadow each other.
 * Never exported by either: the resolved configuration (it holds the private key).
 */
function integrationModule(definition: DynamicModule, name: unknown): DynamicModule {
  const integration = integrationName(name);
  registerIntegrationName(integration);
  const ownTokens = namedServiceTokens(integration);
  const ownExports = ownTokens.map((alias) => alias.provide);
  const isDefault = integration === DEFAULT_INTEGRATION;
  const module: DynamicModule = {
    ...definition,
    providers: [
      ...(definition.providers ?? []),
      { provide: PLATFORM_AUTH_INTEGRATION, useValue: integration },
      ...providers,
      ...ownTokens,
      ...(isDefault ? defaultAliases : []),
    ],
    exports: isDefault ? [...defaultExports, ...ownExports] : ownExports,
  };
  // A named integration is injected by its tokens only, which both builds share already.
  return isDefault ? withOtherBuildAliases(module, 'platform-auth', injectedByClass) : module;
}

/**
 * Authenticates a NestJS app to the platform as a system integration. Configure it with `forRoot(options)` or
 * `forRootAsync(...)`; every credential problem is reported at start-up, all at once. Inject `PlatformHttpService`:
 * its requests to the platform carry a valid bearer token.
 */
@Module({})
export class PlatformAuthModule extends ConfigurablePlatformAuthModule {
  /** One integration: the default one, or with `name` a named one beside it (inject with `@InjectTokenProvider(name)`, …). */
  static override forRoot(options: PlatformAuthModuleOptions): DynamicModule {
    return integrationModule(withOwnedOptions(super.forRoot(options)), options.name);
  }

  static override forRootAsync(options: PlatformAuthModuleAsyncOptions): DynamicModule {
    return integrationModule(withOwnedOptions(super.forRootAsync(options)), options.name);
  }
}

/**
 * The options provider gets a copy of the caller's options (own properties only, see `ownOptions`), never the
 * caller's object: the copy loses its key text and passphrase after start-up, and the caller's object stays intact
 * for reuse (another module, a test, a ConfigService namespace).
 */
function withOwnedOptions(definition: DynamicModule): DynamicModule {
  const providers = definition.providers?.map((provider): Provider => {
    if (typeof provider !== 'object' || provider.provide !== PLATFORM_AUTH_MODULE_OPTIONS) return provider;
    if ('useValue' in provider)
      return { provide: PLATFORM_AUTH_MODULE_OPTIONS, useValue: ownOptions(provider.useValue) };
    if ('useFactory' in provider) {
      const { useFactory, inject } = provider as FactoryProvider<unknown>;
      return {
        provide: PLATFORM_AUTH_MODULE_OPTIONS,
        useFactory: async (...args: unknown[]) => ownOptions(await useFactory(...args)),
        inject,
      };
    }
    return provider;
  });
  return { ...definition, providers };
}
