import type { Clock } from '../platform-auth.clock.js';
import { USER_SESSION_COOKIE, USER_TRANSACTION_COOKIE } from './platform-user-auth.constants.js';
import type { UserTokens } from './platform-user-auth.service.js';
import { seal, stringClaim, unseal } from './user-auth.seal.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';

/**
 * Cookies for the two values a sign-in leaves with the browser: the transaction (from the login route to the
 * callback) and the session (the user's tokens, encrypted with a key of its own). Every cookie is HttpOnly,
 * SameSite=Lax and, unless `secureCookies: false`, Secure. Returns `Set-Cookie` header values; see
 * `setCookies` for writing them on Express or Fastify.
 */
/** Builds the cookie helper over a resolved configuration; only the module calls it. */
export let createPlatformUserSessions: (config: ResolvedUserAuthConfig, clock: Clock) => PlatformUserSessions;

export class PlatformUserSessions {
  private readonly callbackPath: string;

  static {
    createPlatformUserSessions = (config, clock) => new PlatformUserSessions(config, clock);
  }

  private constructor(
    private readonly config: ResolvedUserAuthConfig,
    private readonly clock: Clock,
  ) {
    // Sent back only where it is needed.
    this.callbackPath = new URL(config.redirectUri).pathname;
  }

  transactionCookie(transaction: string): string {
    return this.cookie(USER_TRANSACTION_COOKIE, transaction, this.config.transactionLifetimeSeconds, this.callbackPath);
  }

  clearTransactionCookie(): string {
    return this.cookie(USER_TRANSACTION_COOKIE, '', 0, this.callbackPath);
  }

  /** The transaction from a request's `Cookie` header, for `completeAuthorization`. */
  readTransaction(cookieHeader: string | undefined): string | undefined {
    return readCookie(cookieHeader, USER_TRANSACTION_COOKIE);
  }

  /**
   * A session cookie holding `tokens`. It lives as long as the access token, or `sessionLifetimeSeconds` when there
   * is a refresh token to renew it with.
   */
  async sessionCookie(tokens: UserTokens): Promise<string> {
    const now = this.clock.now();
    const expiresAt = tokens.refreshToken
      ? now + this.config.sessionLifetimeSeconds * 1000
      : tokens.expiresAt.getTime();
    const claims = {
      at: tokens.accessToken,
      ate: tokens.expiresAt.getTime(),
      ...(tokens.refreshToken ? { rt: tokens.refreshToken } : {}),
      ...(tokens.scope !== undefined ? { sc: tokens.scope } : {}),
    };
    const value = await seal(claims, this.config.sessionKey, this.config.clientId, now, expiresAt);
    return this.cookie(USER_SESSION_COOKIE, value, Math.max(0, Math.floor((expiresAt - now) / 1000)), '/');
  }

  clearSessionCookie(): string {
    return this.cookie(USER_SESSION_COOKIE, '', 0, '/');
  }

  /** The tokens of a request's session cookie; `undefined` when there is none or it is expired, altered or foreign. */
  async readSession(cookieHeader: string | undefined): Promise<UserTokens | undefined> {
    const value = readCookie(cookieHeader, USER_SESSION_COOKIE);
    const opened = await unseal(value, this.config.sessionKey, this.config.clientId, this.clock.now(), (payload) => {
      const accessToken = stringClaim(payload, 'at');
      const expiresAt = payload.ate;
      if (!accessToken || typeof expiresAt !== 'number') return undefined;
      const tokens: UserTokens = { accessToken, tokenType: 'Bearer', expiresAt: new Date(expiresAt) };
      const refreshToken = stringClaim(payload, 'rt');
      if (refreshToken) tokens.refreshToken = refreshToken;
      const scope = stringClaim(payload, 'sc');
      if (scope !== undefined) tokens.scope = scope;
      return tokens;
    });
    return opened.ok ? opened.value : undefined;
  }

  private cookie(name: string, value: string, maxAgeSeconds: number, path: string): string {
    const secure = this.config.secureCookies ? '; Secure' : '';
    return `${name}=${value}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly${secure}; SameSite=Lax`;
  }
}

/** One cookie's value from a `Cookie` header (RFC 6265 §5.4); our values are base64url and dots, never quoted. */
export function readCookie(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  for (const pair of cookieHeader.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim() || undefined;
  }
  return undefined;
}

/** The part of an Express response or a Fastify reply that sets headers. */
export interface HeaderWritable {
  header?(name: string, value: string | string[]): unknown;
  setHeader?(name: string, value: string | string[]): unknown;
}

/** Writes `Set-Cookie` values on an Express response or a Fastify reply (replacing any set before). */
export function setCookies(response: HeaderWritable, cookies: string[]): void {
  if (typeof response.header === 'function') response.header('Set-Cookie', cookies);
  else response.setHeader?.('Set-Cookie', cookies);
}
