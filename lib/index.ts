// The public API. Everything else in lib/ is internal; api/nestjs-platform-auth.api.md and the packaging snapshot
// lock this list. Every type a public signature uses is named here (API Extractor fails on one that is not), so the
// list is the whole surface a reader holds: a part of an option or a status that apps never write on its own is
// declared where it is used (`tokenStore.sentinel`, `status().rateLimit`), not given a name of its own.
export { PlatformAuthModule } from './platform-auth.module.js';
export {
  InjectAssertionSigner,
  InjectPlatformFetch,
  InjectPlatformHttpService,
  InjectTokenProvider,
  getAssertionSignerToken,
  getPlatformFetchToken,
  getPlatformHttpServiceToken,
  getTokenProviderToken,
} from './platform-auth.integrations.js';
export type { PlatformAuthModuleAsyncOptions } from './platform-auth.module-definition.js';
export { PlatformTenants } from './tenants/platform-tenants.js';
export { PlatformTenantHttpService } from './tenants/tenant-http.service.js';
export type { PlatformTenantsAsyncOptions } from './tenants/tenants.module.js';
export type { PlatformTenant, PlatformTenantsOptions, PlatformTenantsStatus } from './tenants/tenants.types.js';
export {
  NoCurrentTenantError,
  PlatformTenantConfigError,
  TenantReleasedError,
  TenantResolutionError,
  UnknownTenantError,
} from './tenants/tenants.errors.js';
export { PlatformHttpService } from './http/platform-http.service.js';
export { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
export { PlatformFetch, type PlatformFetchInit } from './http/clients/platform-fetch.js';
export {
  PLATFORM_AUTH_RETRY_HEADER,
  type PlatformDispatcher,
  type PlatformInterceptor,
} from './http/clients/undici.interceptor.js';
export { PlatformUnavailableError } from './calls/calls.errors.js';
export { PlatformAuthExceptionFilter, type PlatformAuthErrorBody } from './http/token-exchange.filter.js';
export { TokenProvider, type AccessToken } from './token/token.provider.js';
export type { TokenProviderStatus } from './token/token-status.types.js';
export { AssertionSigner } from './token/assertion.signer.js';
export { platformAuthConfig } from './options/platform-auth.config.js';
export type {
  CallRetryOptions,
  ExchangeOptions,
  IdempotencyKeyOptions,
  KeySource,
  PlatformAuthOptions,
  PlatformAuthSigner,
  RateLimitOptions,
} from './options/platform-auth-options.interface.js';
export { systemClock, type Clock } from './platform-auth.clock.js';
export { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from './telemetry/telemetry.events.js';
export type { PlatformAuthDiagnosticsEvent } from './platform-auth.observer.js';
export {
  AssertionSigningError,
  CredentialRotationError,
  PlatformAuthConfigError,
  PlatformAuthError,
  TokenExchangeError,
  type ConfigProblem,
} from './platform-auth.errors.js';
export { RateLimitWaitError } from './calls/rate-limit/rate-limit.errors.js';
// The shared token store: the module builds it from `tokenStore` (a Redis, or the application's client), and a store
// for another engine implements TokenStore.
export type { TokenStore, TokenStoreEntry } from './store/token-store.interface.js';
export type { TokenStoreOptions } from './options/token-store-options.interface.js';
// For a part built on this package that keeps its own Redis: the store's connection settings, checks and client.
export type { RedisConnectionOptions } from './options/token-store-options.interface.js';
export { defineRedisConnection } from './store/redis-connection.seam.js';
