/** Defaults, limits and environment variables of user sign-in (see docs/user-sign-in.md). */
import { sharedToken } from '../platform-auth.constants.js';
import { tableEnv } from '../options/options.table.js';
import { PLATFORM_USER_AUTH_OPTIONS } from '../options/options.table.user.js';

export const PLATFORM_USER_AUTH_CONFIG_NAMESPACE = 'platformUserAuth';

export const DEFAULT_AUTHORIZE_PATH: string = PLATFORM_USER_AUTH_OPTIONS.authorizePath.default;
export const DEFAULT_USER_TOKEN_PATH: string = PLATFORM_USER_AUTH_OPTIONS.tokenPath.default;
/** Used when a token response has no `expires_in`: the platform's stated token lifetime, "about ten minutes". */
export const DEFAULT_USER_TOKEN_LIFETIME_SECONDS = 600;
export const MIN_STATE_SECRET_BYTES = 32;
/** What one answer of the authorization server may weigh: the machine exchange's limit (RFC 6749 §5.1 answers are small). */
export const USER_RESPONSE_LIMIT_BYTES = 64 * 1024;
/** How long a client assertion (`private_key_jwt`) is valid: one request, plus clock differences. */
export const CLIENT_ASSERTION_LIFETIME_SECONDS = 60;
/** Ended sessions this process remembers until their end (see EndedSessions). */
export const MAX_ENDED_SESSIONS = 100_000;

/**
 * Cookie holding the encrypted transaction between `/login` and `/callback`. `__Host-`: the browser accepts it only
 * from this host, over a secure connection, with `Path=/` and no `Domain`, so a sibling subdomain cannot plant one.
 * With `secureCookies: false` the name is the same without the prefix (browsers refuse `__Host-` without `Secure`).
 */
export const USER_TRANSACTION_COOKIE = '__Host-platform_user_tx';
/** Cookie holding the encrypted session (the user's tokens) after sign-in; `__Host-` as above. */
export const USER_SESSION_COOKIE = '__Host-platform_user_session';
/** The prefix the cookie names lose when cookies are not `Secure`. */
export const HOST_COOKIE_PREFIX = '__Host-';

/** Injection token of the resolved configuration. Never exported: it holds the derived keys. */
export const PLATFORM_USER_AUTH_CONFIG = Symbol('PLATFORM_USER_AUTH_CONFIG');

/** The environment variable of each option, for the names in messages. */
export const PLATFORM_USER_AUTH_ENV: Readonly<Record<string, string>> = tableEnv(PLATFORM_USER_AUTH_OPTIONS);
/** The client authentication methods of the token endpoint (RFC 8414 `token_endpoint_auth_methods_supported`). */
export const USER_CLIENT_AUTHENTICATIONS = PLATFORM_USER_AUTH_OPTIONS.clientAuthentication.values;
/** Injection token of user sign-in's composition root (`platform-user-auth.wiring.ts`). */
export const PLATFORM_USER_AUTH_RUNTIME = Symbol('PLATFORM_USER_AUTH_RUNTIME');
/** Injection token of the clock expiry checks read; shared by both builds (see `sharedToken`), for the guard. */
export const PLATFORM_USER_AUTH_CLOCK = sharedToken('PlatformUserAuthClock');
/** Shared injection tokens of the services (see `sharedToken`). */
export const PLATFORM_USER_AUTH_TOKEN = sharedToken('PlatformUserAuth');
export const PLATFORM_USER_SESSIONS_TOKEN = sharedToken('PlatformUserSessions');
/** Where `PlatformUserGuard` leaves the session on the request for `@PlatformUser()`. */
export const PLATFORM_USER_REQUEST_KEY = Symbol('PLATFORM_USER');
