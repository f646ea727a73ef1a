import type { Clock } from '../platform-auth.clock.js';
import type { KeySource } from '../options/key-source.interface.js';

/** How the client authenticates at the token endpoint (and the revocation endpoint). */
export type UserClientAuthentication = 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';

/** Options of `PlatformUserAuthModule`: user sign-in with the Authorization Code flow and PKCE (S256). */
export interface PlatformUserAuthOptions {
  /** `https://{platform_domain}`; plain `http:` only on loopback (`PLATFORM_BASE_URL`). */
  baseUrl: string;
  /** The client registered for user sign-in (`PLATFORM_USER_CLIENT_ID`). */
  clientId: string;
  /** Where the platform sends the browser back; registered with the client, compared exactly (`PLATFORM_USER_REDIRECT_URI`). */
  redirectUri: string;
  /**
   * Space-separated scopes (`PLATFORM_USER_SCOPE`). Unset: no `scope` parameter, so the platform applies its default
   * (RFC 6749 §3.3); an OpenID Provider needs at least `openid`. With `openid`, the token response must carry an ID
   * token whose `nonce` matches. With `offline_access`, the authorization request also carries `prompt=consent`
   * (OpenID Connect Core §11), without which such servers issue no refresh token.
   */
  scope?: string;
  /**
   * At least 32 random bytes (`PLATFORM_USER_STATE_SECRET`, e.g. `openssl rand -base64 32`). Keys the encrypted
   * transaction and session values; every replica of the app must share it. A secret: never printed, dropped from
   * the module's options after start-up.
   */
  stateSecret: string | Uint8Array;
  /**
   * Read the authorization server's metadata once at start-up (`PLATFORM_USER_DISCOVERY=true`): OpenID Connect
   * Discovery at `{issuer}/.well-known/openid-configuration`, else RFC 8414. Its endpoints, issuer and JWKS are then
   * used (ID token signatures are verified when it has a `jwks_uri`); a document naming another issuer is refused at
   * start-up. Default false: the platform's paths below.
   */
  discovery?: boolean;
  /**
   * How the client authenticates at the token and revocation endpoints (`PLATFORM_USER_CLIENT_AUTH`). Default `none`
   * (a public client sending `client_id`). `client_secret_basic` / `client_secret_post` need `clientSecret`;
   * `private_key_jwt` signs an RS256 client assertion (RFC 7523) with the key below.
   */
  clientAuthentication?: UserClientAuthentication;
  /** The client secret, for `client_secret_basic` and `client_secret_post` (`PLATFORM_USER_CLIENT_SECRET`). A secret. */
  clientSecret?: string;
  /**
   * `private_key_jwt`: the key client assertions are signed with and its certificate, from the same sources and
   * through the same checks as machine authentication's `key` (`PLATFORM_USER_PRIVATE_KEY[_PATH|_URI]`,
   * `PLATFORM_USER_PRIVATE_KEY_PASSPHRASE`, `PLATFORM_USER_CERTIFICATE[_PATH]`). The certificate is required with
   * `privateKeyUri` or `signer` (every signature is checked against it), optional with a PEM key, which it must then
   * match.
   */
  key?: KeySource;
  /** Default `/loginservice/connect/authorize` (docs/platform-contract.md#user-sign-in). Not with `discovery`. */
  authorizePath?: string;
  /** Default `/loginservice/connect/token`: an assumption, see docs/platform-contract.md#user-sign-in. Not with `discovery`. */
  tokenPath?: string;
  /** The revocation endpoint (RFC 7009) below `baseUrl`, for a server without discovery. Default none. */
  revocationPath?: string;
  /** The end-session endpoint (OpenID Connect RP-Initiated Logout) below `baseUrl`, without discovery. Default none. */
  endSessionPath?: string;
  /**
   * The `iss` the platform puts into authorization responses (RFC 9207), when it does. Default: `baseUrl`.
   * A response naming another issuer is rejected (mix-up defence). With `discovery`, the issuer whose metadata is
   * read, which must name exactly this issuer.
   */
  issuer?: string;
  /** How long a sign-in may take, from `/login` to `/callback`. Default 600 seconds, at most 600. */
  transactionLifetimeSeconds?: number;
  /**
   * How long a signed-in session lasts when the platform issued a refresh token, counted from sign-in: refreshing
   * renews the access token, never the session. Default 8 hours.
   */
  sessionLifetimeSeconds?: number;
  /** Timeout of one token endpoint request. Default 10 000 ms. */
  requestTimeoutMs?: number;
  /**
   * Cookies carry `Secure` and the `__Host-` prefix. Default true; browsers treat `http://localhost` and
   * `127.0.0.1` as secure too. False: no `Secure`, and names without the prefix (browsers refuse it without `Secure`).
   */
  secureCookies?: boolean;
  /** Source of time for expiry checks. Default the system clock. */
  clock?: Clock;
}
