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
  DECLARED_VARIABLES,
  LOGGER_CONTEXT,
  PLATFORM_AUTH_INTEGRATION,
  PLATFORM_AUTH_LOGGER,
} from './platform-auth.constants.js';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import {
  ConfigurablePlatformAuthModule,
  PLATFORM_AUTH_MODULE_OPTIONS,
  type PlatformAuthModuleAsyncOptions,
} from './platform-auth.module-definition.js';
import { DEFAULT_INTEGRATION, integrationName } from './options/integration-name.util.js';
import { forgetCredentialText, ownOptions } from './options/own-options.util.js';
import {
  INTEGRATION_SERVICES,
  integrationServiceTokens,
  type IntegrationService,
} from './platform-auth.integrations.js';
import { withOwnedOptions } from './platform-auth.module-helpers.js';
import {
  CONFIGURATION_REPORTER,
  PlatformAuthStartupModule,
  StartupProblems,
  reporterProvider,
  type Reporter,
} from './platform-auth.startup-problems.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';
import { loadIntegration, startIntegration } from './platform-auth.builder.js';
import { PlatformHttpService } from './http/platform-http.service.js';
import { PlatformFetch } from './http/clients/platform-fetch.js';
import { TokenProvider } from './token/token.provider.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import type { PlatformAuthRuntime } from './platform-auth.wiring.js';
import { PlatformTenantsModule, type PlatformTenantsAsyncOptions } from './tenants/tenants.module.js';
import type { PlatformTenantsOptions } from './tenants/tenants.types.js';

/** Injection token of the integration's runtime (everything the composition root built). Internal, never exported. */
export const PLATFORM_AUTH_RUNTIME = Symbol('PLATFORM_AUTH_RUNTIME');

/**
 * Checks the options (every problem at once, with the other modules' problems: see `StartupProblems`), forgets the
 * secrets they held, and builds the integration (`startIntegration`). The runtime's lifecycle hooks connect the
 * store, run the start-up check and shut it all down.
 */
async function createRuntime(
  options: PlatformAuthOptions,
  integration: string,
  logger: LoggerService,
  problems: StartupProblems,
  reporter: Reporter,
): Promise<PlatformAuthRuntime> {
  const clock = options.clock ?? systemClock;
  let config: ResolvedPlatformAuthConfig;
  try {
    config = await loadIntegration({
      options,
      owner: { integration, env: problems.environment() },
      nowMs: clock.now(),
    });
  } catch (error) {
    await problems.settle(reporter, error);
    throw error;
  } finally {
    // The options provider holds the module's own copy (see `withOwnedOptions`): once the key is parsed into a
    // KeyObject or opened in its token, its text, the URI's PIN and the other secrets have no business staying in
    // the container.
    forgetCredentialText(options);
  }
  await problems.settle(reporter);
  return startIntegration({ config, integration, clock, logger, telemetry: {} });
}

const fromRuntime = <T>(provide: unknown, pick: (runtime: PlatformAuthRuntime) => T): FactoryProvider<T> => ({
  provide: provide as FactoryProvider['provide'],
  useFactory: pick,
  inject: [PLATFORM_AUTH_RUNTIME],
});
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
    inject: [
      PLATFORM_AUTH_MODULE_OPTIONS,
      PLATFORM_AUTH_INTEGRATION,
      PLATFORM_AUTH_LOGGER,
      StartupProblems,
      CONFIGURATION_REPORTER,
    ],
  },
];
/** Where each service comes from in the runtime the composition root built. */
const SERVICE_OF_RUNTIME: Record<IntegrationService, (runtime: PlatformAuthRuntime) => unknown> = {
  TokenProvider: (runtime) => runtime.tokens,
  AssertionSigner: (runtime) => runtime.signer,
  PlatformAuthInterceptor: (runtime) => runtime.interceptor,
  PlatformHttpService: (runtime) => runtime.httpService,
  PlatformFetch: (runtime) => runtime.platformFetch,
};

/**
 * The integration's services: under their shared tokens always; by class for the default integration only, with the
 * shared tokens as aliases of the classes.
 */
function serviceProviders(integration: string): Provider[] {
  const tokens = integrationServiceTokens(integration);
  if (integration !== DEFAULT_INTEGRATION) {
    return tokens.map(({ service, provide }) => fromRuntime(provide, SERVICE_OF_RUNTIME[service]));
  }
  return tokens.flatMap(({ service, provide }) => [
    fromRuntime(INTEGRATION_SERVICES[service], SERVICE_OF_RUNTIME[service]),
    { provide, useExisting: INTEGRATION_SERVICES[service] },
  ]);
}

/** What the default integration exports: its services by class, as apps with one integration inject them. */
const defaultExports = [
  AssertionSigner,
  TokenProvider,
  PlatformAuthInterceptor,
  PlatformHttpService,
  PlatformFetch,
  HttpService,
  // For PlatformAuthExceptionFilter registered as a provider: it logs where the module logs.
  PLATFORM_AUTH_LOGGER,
];
const defaultAliases: Provider[] = [
  // For apps that import only this module; where another HttpModule is in scope, inject PlatformHttpService.
  { provide: HttpService, useExisting: PlatformHttpService },
];

/**
 * Completes the builder's definition for one integration. Every module instance holds its own providers; the
 * default one exports them by class, and every one under its shared tokens (the default integration's
 * `nestjs-platform-auth:TokenProvider`, a named one's `nestjs-platform-auth:TokenProvider:billing`, …), which a
 * class written against either build of the package finds. Never exported: the resolved configuration (it holds the
 * private key).
 */
function integrationModule(definition: DynamicModule, name: unknown): DynamicModule {
  const integration = integrationName(name);
  const sharedExports = integrationServiceTokens(integration).map((token) => token.provide);
  const isDefault = integration === DEFAULT_INTEGRATION;
  return {
    ...definition,
    module: PlatformAuthModule,
    imports: [...(definition.imports ?? []), PlatformAuthStartupModule],
    providers: [
      ...(definition.providers ?? []),
      { provide: PLATFORM_AUTH_INTEGRATION, useValue: integration },
      reporterProvider(
        isDefault ? 'PlatformAuthModule' : `PlatformAuthModule '${integration}'`,
        PLATFORM_AUTH_MODULE_OPTIONS,
      ),
      ...providers,
      ...serviceProviders(integration),
      ...(isDefault ? defaultAliases : []),
    ],
    exports: isDefault ? [...defaultExports, ...sharedExports] : sharedExports,
  };
}

/**
 * Authenticates a NestJS app to the platform as a system integration. Configure it with `forRoot(options)` or
 * `forRootAsync(...)`; every credential problem is reported at start-up, all at once. Inject `PlatformHttpService`:
 * its requests to the platform carry a valid bearer token.
 */
@Module({})
export class PlatformAuthModule {
  /** One integration: the default one, or with `name` a named one beside it (inject with `@InjectTokenProvider(name)`, …). */
  static forRoot(
    options: PlatformAuthOptions & Pick<PlatformAuthModuleAsyncOptions, 'isGlobal' | 'name'>,
  ): DynamicModule {
    return integrationModule(ownedOptions(ConfigurablePlatformAuthModule.forRoot(options)), options.name);
  }

  /** The same, with the options from a factory, a class or an existing provider (`platformAuthConfig.asProvider()`). */
  static forRootAsync(options: PlatformAuthModuleAsyncOptions): DynamicModule {
    return integrationModule(ownedOptions(ConfigurablePlatformAuthModule.forRootAsync(options)), options.name);
  }

  /**
   * Integrations added at run time, one per tenant (customer organisation): `resolve(tenantId)` gives a tenant's
   * settings in the shape `forRoot` takes, on first use. Inject `PlatformTenants` (`get(tenantId)`, `run`, `status`)
   * and `PlatformTenantHttpService` (sends as the current tenant).
   */
  static forTenants(options: PlatformTenantsOptions): DynamicModule {
    return PlatformTenantsModule.forTenants(options);
  }

  /** The same, with the options from a factory (`{ imports, inject, useFactory }`). */
  static forTenantsAsync(options: PlatformTenantsAsyncOptions): DynamicModule {
    return PlatformTenantsModule.forTenantsAsync(options);
  }

  /**
   * For a module built on this package (an add-on) that reads `PLATFORM_*` variables of its own: a provider, put
   * among its providers, that tells every module of the package in the application to leave `names` out of its
   * start-up warning about variables no part reads.
   */
  static readsVariables(names: readonly string[]): Provider {
    return { provide: DECLARED_VARIABLES, useValue: [...names] };
  }
}

/** The options provider gets the module's own copy of the options (see `withOwnedOptions`, `ownOptions`). */
const ownedOptions = (definition: DynamicModule): DynamicModule =>
  withOwnedOptions(definition, PLATFORM_AUTH_MODULE_OPTIONS, ownOptions);
