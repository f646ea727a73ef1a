// The public API. Everything else in lib/ is internal; test/packaging/public-api.snapshot.json locks this list.
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
export type {
  PlatformAuthModuleAsyncOptions,
  PlatformAuthModuleExtras,
  PlatformAuthModuleOptions,
} from './platform-auth.module-definition.js';
export { PlatformTenants } from './tenants/platform-tenants.js';
export { PlatformTenantHttpService } from './tenants/tenant-http.service.js';
export type { PlatformTenantsAsyncOptions } from './tenants/tenants.module.js';
export type {
  PlatformTenant,
  PlatformTenantOptions,
  PlatformTenantsOptions,
  PlatformTenantsStatus,
  PlatformTenantsTelemetryOptions,
} from './tenants/tenants.types.js';
export {
  NoCurrentTenantError,
  PlatformTenantConfigError,
  TenantReleasedError,
  TenantResolutionError,
  TenantResolveTimeoutError,
  UnknownTenantError,
} from './tenants/tenants.errors.js';
export { PLATFORM_AUTH_HTTP_SERVICE } from './platform-auth.constants.js';
export { PlatformHttpService } from './http/platform-http.service.js';
export { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
export { PlatformFetch, type PlatformFetchInit } from './http/transport/platform-fetch.js';
export {
  PLATFORM_AUTH_RETRY_HEADER,
  type PlatformDispatcher,
  type PlatformInterceptor,
} from './http/transport/undici.interceptor.js';
export { PlatformUnavailableError } from './calls/calls.errors.js';
export {
  PlatformAuthExceptionFilter,
  type PlatformAuthAnsweredError,
  type PlatformAuthErrorBody,
} from './http/token-exchange.filter.js';
export { TokenProvider, type AccessToken } from './token/token.provider.js';
export type { RotateCredentialsInput } from './token/credentials.rotator.js';
export { AssertionSigner, type AssertionClaims, type CreateAssertionOptions } from './token/assertion.signer.js';
export { platformAuthConfig } from './options/platform-auth.config.js';
export type {
  CallRetryOptions,
  ExchangeOptions,
  IdempotencyKeyOptions,
  KeySource,
  PlatformAuthOptions,
  PlatformAuthSigner,
  RateLimitOptions,
  RetryOptions,
  ThumbprintAlgorithm,
} from './options/platform-auth-options.interface.js';
export type {
  TokenStoreOptions,
  TokenStoreSentinelOptions,
  TokenStoreTlsOptions,
} from './options/token-store-options.interface.js';
export { systemClock, type Clock } from './platform-auth.clock.js';
export {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  type CredentialChangeOutcome,
  type OutboxTelemetryEvent,
  type PlatformAuthDiagnosticsEvent,
  type RetryReason,
  type PlatformAuthDiagnosticsEventBody,
  type RateLimitMode,
  type StoreLockOutcome,
} from './telemetry/telemetry.events.js';
export type {
  LastExchangeStatus,
  RateLimitStatus,
  SharedStoreStatus,
  TokenProviderStatus,
  TokenState,
} from './token/token-status.types.js';
export type { CredentialReloadStatus } from './credentials/credentials.reloader.js';
export {
  AssertionKeyError,
  AssertionSignatureError,
  AssertionSigningError,
  CredentialRotationError,
  PlatformAuthConfigError,
  PlatformAuthError,
  TokenExchangeError,
  isPlatformAuthConfigError,
  isPlatformAuthError,
  isTokenExchangeError,
  type AssertionKeySource,
  type ConfigProblem,
  type SignatureFault,
  type TokenExchangeErrorDetails,
  type TokenExchangeFailure,
} from './platform-auth.errors.js';
export { RateLimitWaitError } from './calls/rate-limit/rate-limit.errors.js';
// The shared token store. RedisTokenStore imports `redis` only when it connects (with types of our own), and the
// module needs it anyway for PLATFORM_TOKEN_STORE_URL, so exporting it here costs users without a store nothing; a
// `./redis` subpath would add an entry point and save no code.
export type { TokenStore, TokenStoreEntry } from './store/token-store.interface.js';
export { RedisTokenStore, type RedisTokenStoreOptions } from './store/token-store.redis.js';
export type {
  RedisClusterCommandClient,
  RedisCommandClient,
  RedisSentinelCommandClient,
  RedisTokenStoreClient,
} from './store/redis.channel.js';
