import type { Clock } from '../platform-auth.clock.js';

/** Options of `PlatformUserAuthModule`: user sign-in with the Authorization Code flow and PKCE (S256). */
export interface PlatformUserAuthOptions {
  /** `https://{platform_domain}`; plain `http:` only on loopback (`PLATFORM_BASE_URL`). */
  baseUrl: string;
  /** The public client registered for user sign-in (`PLATFORM_USER_CLIENT_ID`). */
  clientId: string;
  /** Where the platform sends the browser back; registered with the client, compared exactly (`PLATFORM_USER_REDIRECT_URI`). */
  redirectUri: string;
  /**
   * Space-separated scopes (`PLATFORM_USER_SCOPE`). Unset: no `scope` parameter, so the platform applies its default
   * (RFC 6749 §3.3). With `openid`, the token response must carry an ID token whose `nonce` matches.
   */
  scope?: string;
  /**
   * At least 32 random bytes (`PLATFORM_USER_STATE_SECRET`, e.g. `openssl rand -base64 32`). Keys the encrypted
   * transaction and session values; every replica of the app must share it.
   */
  stateSecret: string | Uint8Array;
  /** Default `/loginservice/connect/authorize` (docs/platform-contract.md#user-sign-in). */
  authorizePath?: string;
  /** Default `/loginservice/connect/token`: an assumption, see docs/platform-contract.md#user-sign-in. */
  tokenPath?: string;
  /**
   * The `iss` the platform puts into authorization responses (RFC 9207), when it does. Default: `baseUrl`.
   * A response naming another issuer is rejected (mix-up defence).
   */
  issuer?: string;
  /** How long a sign-in may take, from `/login` to `/callback`. Default 600 seconds, at most 600. */
  transactionLifetimeSeconds?: number;
  /** How long a signed-in session lasts when the platform issued a refresh token. Default 8 hours. */
  sessionLifetimeSeconds?: number;
  /** Timeout of one token endpoint request. Default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Cookies carry `Secure`. Default true; browsers treat `http://localhost` and `127.0.0.1` as secure too. */
  secureCookies?: boolean;
  /** Source of time for expiry checks. Default the system clock. */
  clock?: Clock;
}
