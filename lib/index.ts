export { PlatformAuthModule, InjectPlatformHttpService } from './platform-auth.module.js';
export { TokenProvider, type AccessToken } from './token.provider.js';
export { PlatformAuthInterceptor, resolveRequestUrl } from './platform-auth.interceptor.js';
export { REDACTED, redactAxiosError } from './redaction.util.js';
export {
  PLATFORM_AUTH_MODULE_OPTIONS,
  type PlatformAuthModuleAsyncOptions,
  type PlatformAuthModuleExtras,
  type PlatformAuthModuleOptions,
} from './platform-auth.module-definition.js';
export { platformAuthConfig, readPlatformAuthEnv } from './platform-auth.config.js';
export { AssertionSigner, type AssertionClaims, type CreateAssertionOptions } from './assertion.signer.js';
export { systemClock, type Clock } from './clock.js';
export {
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_ENV,
  PLATFORM_AUTH_HTTP_SERVICE,
  DEFAULT_TOKEN_PATH,
  MAX_ASSERTION_LIFETIME_SECONDS,
} from './platform-auth.constants.js';
export {
  AssertionSigningError,
  PlatformAuthConfigError,
  PlatformAuthError,
  TokenExchangeError,
  type ConfigProblem,
  type TokenExchangeErrorDetails,
  type TokenExchangeFailure,
} from './platform-auth.errors.js';
export type { PlatformAuthOptions, RetryOptions, ThumbprintAlgorithm } from './interfaces/platform-auth-options.interface.js';
export { resolvePlatformAuthOptions, isLoopbackHost, type ResolvedPlatformAuthConfig } from './platform-auth.options-resolver.js';
export { certificateThumbprint, normalizeThumbprint } from './credentials/thumbprint.util.js';
export { normalizePem } from './credentials/pem.util.js';
export type { LoadedCredentials } from './credentials/credentials.loader.js';
