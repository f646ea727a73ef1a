import { Inject, type Abstract } from '@nestjs/common';
import { PlatformHttpService } from './http/platform-http.service.js';
import { DEFAULT_INTEGRATION, integrationName } from './options/integration-name.util.js';
import { sharedAcrossBuilds } from './platform-auth.builds.js';
import { PLATFORM_AUTH_HTTP_SERVICE } from './platform-auth.constants.js';
import { AssertionSigner } from './token/assertion.signer.js';
import { TokenProvider } from './token/token.provider.js';

type ServiceKind = 'PlatformHttpService' | 'TokenProvider' | 'AssertionSigner';

/*
 * Named tokens must be the same object wherever they are asked for (in `@InjectTokenProvider('billing')` and in the
 * module that provides it), so they are memoised per process, and shared by the package's ES module and CommonJS
 * builds when both are loaded. The set of registered names exists only to make the error for a misspelt name list
 * the names that do exist; it never decides what is injected.
 */
const { namedTokens, registeredNames } = sharedAcrossBuilds('integrations', () => ({
  namedTokens: new Map<string, Abstract<unknown>>(),
  registeredNames: new Set<string>(),
}));

/** Records that a module provides `name`, for the message of a misspelt name elsewhere. */
export function registerIntegrationName(name: string): void {
  registeredNames.add(name);
}

/**
 * The injection token of a named integration's service. It is a function so that Nest, which names an unknown
 * dependency by the token's `name`, says which integration is missing and which ones are registered.
 */
function namedToken(kind: ServiceKind, name: string): Abstract<unknown> {
  const key = `${kind}:${name}`;
  let token = namedTokens.get(key);
  if (!token) {
    const created: Abstract<unknown> = class {};
    Object.defineProperty(created, 'name', {
      get: () =>
        registeredNames.has(name)
          ? `${kind}(${name})`
          : `${kind} of integration '${name}' (not registered; registered integrations: ${
              [...registeredNames].map((n) => `'${n}'`).join(', ') || 'none'
            })`,
    });
    namedTokens.set(key, created);
    token = created;
  }
  return token;
}

export function getPlatformHttpServiceToken(name?: string): Abstract<unknown> | symbol {
  const integration = integrationName(name);
  return integration === DEFAULT_INTEGRATION
    ? PLATFORM_AUTH_HTTP_SERVICE
    : namedToken('PlatformHttpService', integration);
}

export function getTokenProviderToken(name?: string): Abstract<unknown> {
  const integration = integrationName(name);
  return namedToken('TokenProvider', integration);
}

export function getAssertionSignerToken(name?: string): Abstract<unknown> {
  const integration = integrationName(name);
  return namedToken('AssertionSigner', integration);
}

/** Injects the authenticated `PlatformHttpService` of the default integration, or of the named one. */
export const InjectPlatformHttpService = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getPlatformHttpServiceToken(name));

/** Injects the `TokenProvider` of the default integration, or of the named one. */
export const InjectTokenProvider = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getTokenProviderToken(name));

/** Injects the `AssertionSigner` of the default integration, or of the named one. */
export const InjectAssertionSigner = (name?: string): ParameterDecorator & PropertyDecorator =>
  Inject(getAssertionSignerToken(name));

/**
 * The aliases every module provides and exports: its services under tokens of its own. A named module exports only
 * these; the default one also exports its services by class. Each is unique in the application, so
 * `app.get(getTokenProviderToken())` finds the default integration's even with named ones beside it.
 */
export function namedServiceTokens(name: string): { provide: Abstract<unknown>; useExisting: object }[] {
  return [
    { provide: namedToken('PlatformHttpService', name), useExisting: PlatformHttpService },
    { provide: namedToken('TokenProvider', name), useExisting: TokenProvider },
    { provide: namedToken('AssertionSigner', name), useExisting: AssertionSigner },
  ];
}
