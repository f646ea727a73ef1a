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
import { systemClock } from './platform-auth.clock.js';
import {
  LOGGER_CONTEXT,
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
import { loadPlatformAuthConfig, type ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';
import { PlatformHttpService } from './http/platform-http.service.js';
import { TokenProvider } from './token/token.provider.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import { PlatformAuthTelemetry } from './telemetry/telemetry.service.js';
import { integrationHash } from './telemetry/telemetry.events.js';
import { PlatformAuthRuntime, wirePlatformAuth } from './platform-auth.wiring.js';

/** Injection token of the integration's runtime (everything the composition root built). Internal, never exported. */
export const PLATFORM_AUTH_RUNTIME = Symbol('PLATFORM_AUTH_RUNTIME');

/**
 * Resolves the options (every problem at once), forgets the secrets they held, and has the composition root build
 * the integration. The runtime's lifecycle hooks connect the store, run the start-up check and shut it all down.
 */
async function createRuntime(
  options: PlatformAuthOptions,
  integration: string,
  logger: LoggerService,
): Promise<PlatformAuthRuntime> {
  const clock = options.clock ?? systemClock;
  let config: ResolvedPlatformAuthConfig;
  try {
    config = await loadPlatformAuthConfig(options, clock.now(), integration);
  } finally {
    // The options provider holds the module's own copy (see `withOwnedOptions`): once the key is parsed into a
    // KeyObject or opened in its token, its text, the URI's PIN and the other secrets have no business staying in
    // the container.
    forgetCredentialText(options);
  }
  for (const warning of config.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
  try {
    const telemetry = await PlatformAuthTelemetry.load(
      {
        integration: integrationHash(config.tokenUrl, config.machineId),
        name: integration === DEFAULT_INTEGRATION ? undefined : integration,
        serverAddress: new URL(config.tokenUrl).hostname,
        logger,
      },
      clock,
    );
    return wirePlatformAuth({ config, integration, clock, logger, telemetry });
  } catch (error) {
    // No runtime will shut down: release the key's PKCS#11 sessions here.
    await config.credentials.key.close();
    throw error;
  }
}

const fromRuntime = <T>(provide: unknown, pick: (runtime: PlatformAuthRuntime) => T): FactoryProvider<T> => ({
  provide: provide as FactoryProvider['provide'],
  useFactory: pick,
  inject: [PLATFORM_AUTH_RUNTIME],
});
import { registerBuildClasses, withOtherBuildAliases } from './platform-auth.builds.js';

const providers: Provider[] = [
  {
    provide: PLATFORM_AUTH_LOGGER,
    // A named integration's lines say which integration they are about.
    useFactory: (options: PlatformAuthOptions, integration: string): LoggerService =>
      options.logger ??
      new Logger(integration === DEFAULT_INTEGRATION ? LOGGER_CONTEXT : `${LOGGER_CONTEXT}:${integration}`),
    inject: [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_INTEGRATION],
  },
  {
    provide: PLATFORM_AUTH_RUNTIME,
    useFactory: createRuntime,
    inject: [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_INTEGRATION, PLATFORM_AUTH_LOGGER],
  },
  fromRuntime(TokenProvider, (runtime) => runtime.tokens),
  fromRuntime(AssertionSigner, (runtime) => runtime.signer),
  fromRuntime(PlatformAuthInterceptor, (runtime) => runtime.interceptor),
  fromRuntime(PlatformHttpService, (runtime) => runtime.httpService),
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
  // For PlatformAuthExceptionFilter registered as a provider: it logs where the module logs.
  PLATFORM_AUTH_LOGGER,
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
    module: PlatformAuthModule,
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
export class PlatformAuthModule {
  /** One integration: the default one, or with `name` a named one beside it (inject with `@InjectTokenProvider(name)`, …). */
  static forRoot(options: PlatformAuthModuleOptions): DynamicModule {
    return integrationModule(withOwnedOptions(ConfigurablePlatformAuthModule.forRoot(options)), options.name);
  }

  /** The same, with the options from a factory, a class or an existing provider (`platformAuthConfig.asProvider()`). */
  static forRootAsync(options: PlatformAuthModuleAsyncOptions): DynamicModule {
    return integrationModule(withOwnedOptions(ConfigurablePlatformAuthModule.forRootAsync(options)), options.name);
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
