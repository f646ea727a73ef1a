/** Defaults, limits and environment variables of user sign-in (see docs/user-sign-in.md). */

export const PLATFORM_USER_AUTH_CONFIG_NAMESPACE = 'platformUserAuth';

export const DEFAULT_AUTHORIZE_PATH = '/loginservice/connect/authorize';
export const DEFAULT_USER_TOKEN_PATH = '/loginservice/connect/token';
/** RFC 9700 §4.7: a transaction should not outlive the sign-in it protects; ten minutes at the most. */
export const MAX_TRANSACTION_LIFETIME_SECONDS = 600;
export const DEFAULT_TRANSACTION_LIFETIME_SECONDS = 600;
export const DEFAULT_SESSION_LIFETIME_SECONDS = 8 * 60 * 60;
export const DEFAULT_USER_REQUEST_TIMEOUT_MS = 10_000;
/** Used when a token response has no `expires_in`: the platform's stated token lifetime, "about ten minutes". */
export const DEFAULT_USER_TOKEN_LIFETIME_SECONDS = 600;
export const MIN_STATE_SECRET_BYTES = 32;

/** Cookie holding the encrypted transaction between `/login` and `/callback`. */
export const USER_TRANSACTION_COOKIE = 'platform_user_tx';
/** Cookie holding the encrypted session (the user's tokens) after sign-in. */
export const USER_SESSION_COOKIE = 'platform_user_session';

/** Injection token of the resolved configuration. Never exported: it holds the derived keys. */
export const PLATFORM_USER_AUTH_CONFIG = Symbol('PLATFORM_USER_AUTH_CONFIG');

/** Environment variables read by `platformUserAuthConfig`, keyed by the option they fill. */
export const PLATFORM_USER_AUTH_ENV = {
  baseUrl: 'PLATFORM_BASE_URL',
  clientId: 'PLATFORM_USER_CLIENT_ID',
  redirectUri: 'PLATFORM_USER_REDIRECT_URI',
  scope: 'PLATFORM_USER_SCOPE',
  stateSecret: 'PLATFORM_USER_STATE_SECRET',
} as const;
/** Injection token of the clock expiry checks read. */
export const PLATFORM_USER_AUTH_CLOCK = Symbol('PLATFORM_USER_AUTH_CLOCK');
/** Where `PlatformUserGuard` leaves the session on the request for `@PlatformUser()`. */
export const PLATFORM_USER_REQUEST_KEY = Symbol('PLATFORM_USER');
