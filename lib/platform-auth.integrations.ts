import { Inject, type Abstract } from '@nestjs/common';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import { PlatformHttpService } from './http/platform-http.service.js';
import { PlatformFetch } from './http/clients/platform-fetch.js';
import { DEFAULT_INTEGRATION, integrationName } from './options/integration-name.util.js';
import { sharedToken } from './platform-auth.constants.js';
import { AssertionSigner } from './token/assertion.signer.js';
import { TokenProvider } from './token/token.provider.js';

/**
 * The services every integration's module provides under a shared token, by name: spelt out, since a minifier
 * renames classes and the two builds must agree.
 */
const SERVICES = {
  PlatformHttpService,
  PlatformFetch,
  TokenProvider,
  AssertionSigner,
  PlatformAuthInterceptor,
} as const satisfies Record<string, Abstract<unknown>>;

/**
 * The shared token of an integration's service: `nestjs-platform-auth:TokenProvider` for the default integration,
 * `nestjs-platform-auth:TokenProvider:billing` for a named one. Nest names a token it cannot find, so a misspelt
 * name fails at start-up saying which service and which integration it looked for.
 */
function serviceToken(service: keyof typeof SERVICES, name?: string): symbol {
  const integration = integrationName(name);
  return sharedToken(service, integration === DEFAULT_INTEGRATION ? undefined : integration);
}

export function getPlatformHttpServiceToken(name?: string): symbol {
  return serviceToken('PlatformHttpService', name);
}

export function getPlatformFetchToken(name?: string): symbol {
  return serviceToken('PlatformFetch', name);
}

export function getTokenProviderToken(name?: string): symbol {
  return serviceToken('TokenProvider', name);
}

export function getAssertionSignerToken(name?: string): symbol {
  return serviceToken('AssertionSigner', name);
}

/** Injects the authenticated `PlatformHttpService` of the default integration, or of the named one. */
export const InjectPlatformHttpService = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getPlatformHttpServiceToken(name));

/** Injects the `PlatformFetch` of the default integration, or of the named one. */
export const InjectPlatformFetch = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getPlatformFetchToken(name));

/** Injects the `TokenProvider` of the default integration, or of the named one. */
export const InjectTokenProvider = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getTokenProviderToken(name));

/** Injects the `AssertionSigner` of the default integration, or of the named one. */
export const InjectAssertionSigner = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getAssertionSignerToken(name));

/** Each service of an integration, by the name its shared token carries, with the class the default provides. */
export type IntegrationService = keyof typeof SERVICES;
export const INTEGRATION_SERVICES = SERVICES;

/**
 * The shared token of each service of the integration `name`: what a module provides and exports for it. Each is
 * unique in the application, so `app.get(getTokenProviderToken())` finds the default integration's even with named
 * ones beside it. Only the default integration provides its services by class as well: a named one registers nothing
 * under a class, so `app.get(PlatformHttpService)` and an injection by class never find a named integration's
 * instance, whatever the order of the imports.
 */
export function integrationServiceTokens(name: string): { service: IntegrationService; provide: symbol }[] {
  return Object.keys(SERVICES).map((service) => ({
    service: service as IntegrationService,
    provide: serviceToken(service as IntegrationService, name),
  }));
}
