import { randomBytes } from 'node:crypto';
import type { Clock } from '../platform-auth.clock.js';
import { HOST_COOKIE_PREFIX, USER_SESSION_COOKIE, USER_TRANSACTION_COOKIE } from './platform-user-auth.constants.js';
import type { UserTokens } from './platform-user-auth.types.js';
import { seal, stringClaim, unseal } from './user-auth.seal.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';
import type { EndedSessions } from './user-session.ended.js';

/** A signed-in session: the user's tokens, and the session they belong to. */
export interface UserSession extends UserTokens {
  /** Random; names the session for logout, never the user. */
  readonly sessionId: string;
  /** `sessionLifetimeSeconds` after sign-in; refreshing renews the access token, never this. */
  readonly sessionExpiresAt: Date;
}

/**
 * Cookies for the two values a sign-in leaves with the browser: the transaction (from the login route to the
 * callback) and the session (the user's tokens, encrypted with a key of its own). Every cookie is HttpOnly,
 * SameSite=Lax, `Path=/` and, unless `secureCookies: false`, Secure with a `__Host-` name, which only this host can
 * set. Returns `Set-Cookie` header values; see `setCookies` for writing them on Express or Fastify.
 */
export class PlatformUserSessions {
  /** The session cookie's name: `__Host-platform_user_session`, or `platform_user_session` without Secure cookies. */
  readonly sessionCookieName: string;
  /** The transaction cookie's name: `__Host-platform_user_tx`, or `platform_user_tx` without Secure cookies. */
  readonly transactionCookieName: string;

  /** @internal Only the module builds it; apps get it from the container. */
  constructor(
    private readonly config: ResolvedUserAuthConfig,
    private readonly clock: Clock,
    private readonly ended: EndedSessions,
  ) {
    const name = (prefixed: string) => (config.secureCookies ? prefixed : prefixed.slice(HOST_COOKIE_PREFIX.length));
    this.sessionCookieName = name(USER_SESSION_COOKIE);
    this.transactionCookieName = name(USER_TRANSACTION_COOKIE);
  }

  transactionCookie(transaction: string): string {
    return this.cookie(this.transactionCookieName, transaction, this.config.transactionLifetimeSeconds);
  }

  clearTransactionCookie(): string {
    return this.cookie(this.transactionCookieName, '', 0);
  }

  /** The transaction from a request's `Cookie` header, for `completeAuthorization`; none when it is there twice. */
  readTransaction(cookieHeader: string | undefined): string | undefined {
    return readCookie(cookieHeader, this.transactionCookieName);
  }

  /**
   * A session cookie holding `tokens`. For tokens of a new sign-in it starts a session of `sessionLifetimeSeconds`;
   * for a session's renewed tokens (`{ ...newTokens, sessionId, sessionExpiresAt }` of the session read), it keeps
   * that session and its end. It lives until the session ends, or until the access token expires when there is no
   * refresh token to renew it with.
   */
  async sessionCookie(tokens: UserTokens | UserSession): Promise<string> {
    const now = this.clock.now();
    const session = isSession(tokens)
      ? { id: tokens.sessionId, end: tokens.sessionExpiresAt.getTime() }
      : { id: randomBytes(16).toString('base64url'), end: now + this.config.sessionLifetimeSeconds * 1000 };
    const expiresAt = tokens.refreshToken ? session.end : Math.min(session.end, tokens.expiresAt.getTime());
    const claims = {
      at: tokens.accessToken,
      ate: tokens.expiresAt.getTime(),
      sid: session.id,
      sx: session.end,
      ...(tokens.refreshToken ? { rt: tokens.refreshToken } : {}),
      ...(tokens.idToken ? { it: tokens.idToken } : {}),
      ...(tokens.scope !== undefined ? { sc: tokens.scope } : {}),
    };
    const value = await seal(claims, this.config.sessionKey, this.config.clientId, now, expiresAt);
    return this.cookie(this.sessionCookieName, value, Math.max(0, Math.floor((expiresAt - now) / 1000)));
  }

  clearSessionCookie(): string {
    return this.cookie(this.sessionCookieName, '', 0);
  }

  /**
   * The session of a request's session cookie; `undefined` when there is none, or it is expired, altered, foreign,
   * there twice (a cookie planted beside ours), or its session was ended by logout in this process.
   */
  async readSession(cookieHeader: string | undefined): Promise<UserSession | undefined> {
    const value = readCookie(cookieHeader, this.sessionCookieName);
    const opened = await unseal(
      value,
      this.config.sessionKey,
      this.config.clientId,
      this.clock.now(),
      readSessionClaims,
    );
    if (!opened.ok || this.ended.has(opened.value.sessionId)) return undefined;
    return opened.value;
  }

  private cookie(name: string, value: string, maxAgeSeconds: number): string {
    const secure = this.config.secureCookies ? '; Secure' : '';
    return `${name}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly${secure}; SameSite=Lax`;
  }
}

function isSession(tokens: UserTokens | UserSession): tokens is UserSession {
  const { sessionId, sessionExpiresAt } = tokens as Partial<UserSession>;
  return typeof sessionId === 'string' && sessionId !== '' && sessionExpiresAt instanceof Date;
}

function readSessionClaims(payload: Record<string, unknown>): UserSession | undefined {
  const accessToken = stringClaim(payload, 'at');
  const sessionId = stringClaim(payload, 'sid');
  const { ate, sx } = payload;
  if (!accessToken || !sessionId || typeof ate !== 'number' || typeof sx !== 'number') return undefined;
  const session: UserSession & { -readonly [K in keyof UserTokens]: UserTokens[K] } = {
    accessToken,
    tokenType: 'Bearer',
    expiresAt: new Date(ate),
    sessionId,
    sessionExpiresAt: new Date(sx),
  };
  const refreshToken = stringClaim(payload, 'rt');
  if (refreshToken) session.refreshToken = refreshToken;
  const idToken = stringClaim(payload, 'it');
  if (idToken) session.idToken = idToken;
  const scope = stringClaim(payload, 'sc');
  if (scope !== undefined) session.scope = scope;
  return session;
}

/**
 * One cookie's value from a `Cookie` header (RFC 6265 §5.4); our values are base64url and dots, never quoted.
 * `undefined` when the name is not there, or is there more than once: two cookies of one name are ambiguous (one
 * may have been planted for a parent domain or another path), and neither is taken.
 */
export function readCookie(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  let found: string | undefined;
  let count = 0;
  for (const pair of cookieHeader.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) {
      count += 1;
      found = pair.slice(separator + 1).trim();
    }
  }
  return count === 1 && found ? found : undefined;
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
