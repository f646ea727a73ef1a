/**
 * Injection token of the integration's name (`default` without `name`); every integration's module provides it, so
 * the health indicator finds an application's integrations by it. From the global symbol registry, so the ES module
 * and CommonJS builds agree on it when both are loaded.
 */
export const PLATFORM_AUTH_INTEGRATION: unique symbol = Symbol.for('nestjs-platform-auth.PLATFORM_AUTH_INTEGRATION');
/** Injection token of the logger the module's parts write to: `options.logger`, else Nest's `Logger`. Internal. */
export const PLATFORM_AUTH_LOGGER = Symbol('PLATFORM_AUTH_LOGGER');

export const LOGGER_CONTEXT = 'PlatformAuth';

/**
 * The injection token of a service the package's modules provide (`TokenProvider`, `PlatformUserAuth`, …), of the
 * default integration or of the named one. From the global symbol registry: the package's ES module and CommonJS
 * builds, both loaded in one process, name the same token, so a class written against one build is injected by a
 * module of the other without either build keeping a registry.
 */
export function sharedToken(service: string, integration?: string): symbol {
  return Symbol.for(`nestjs-platform-auth:${service}${integration === undefined ? '' : `:${integration}`}`);
}

/**
 * Injection token under which a module tells the application which `PLATFORM_*` variables it reads (see
 * `PlatformAuthModule.readsVariables`), shared by both builds so a module of either is heard.
 */
export const DECLARED_VARIABLES = sharedToken('DeclaredVariables');
