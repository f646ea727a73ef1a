import { createHash } from 'node:crypto';
import {
  createParamDecorator,
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import {
  PLATFORM_USER_AUTH_CLOCK,
  PLATFORM_USER_AUTH_TOKEN,
  PLATFORM_USER_REQUEST_KEY,
  PLATFORM_USER_SESSIONS_TOKEN,
} from './platform-user-auth.constants.js';
import type { PlatformUserAuth } from './platform-user-auth.service.js';
import type { UserTokens } from './platform-user-auth.types.js';
import { isUserAuthError } from './user-auth.errors.js';
import {
  setCookies,
  type HeaderWritable,
  type PlatformUserSessions,
  type UserSession,
} from './user-session.service.js';

/** Renew a little before the platform would refuse the token, so a request does not race its expiry. */
const RENEW_BEFORE_EXPIRY_MS = 30_000;
/** How long a refresh's result serves requests still carrying the old session cookie. */
const REFRESH_SHARED_FOR_MS = 10_000;

interface RequestWithSession {
  headers: Record<string, string | string[] | undefined>;
  [PLATFORM_USER_REQUEST_KEY]?: UserTokens;
}

/**
 * Lets a request through only with a signed-in session cookie, and renews an expiring access token with its
 * refresh token (setting the new session cookie). Answers 401 otherwise. `@PlatformUser()` then gives the handler
 * the user's tokens. HTTP only (Express or Fastify).
 */
@Injectable()
export class PlatformUserGuard implements CanActivate {
  /**
   * Refreshes by a hash of the refresh token, kept a few seconds after they succeed: the requests of one session
   * that start before the browser has the new cookie share one refresh. Each presenting the old token on its own
   * would look like a replay to a platform that rotates refresh tokens (RFC 9700 §4.14.2), which then revokes the
   * whole sign-in. Per process: replicas do not share it.
   */
  private readonly refreshing = new Map<string, { readonly refresh: Promise<UserTokens>; until?: number }>();

  // By the shared tokens: the guard of either build of the package works with the module of the other.
  constructor(
    @Inject(PLATFORM_USER_AUTH_TOKEN) private readonly auth: PlatformUserAuth,
    @Inject(PLATFORM_USER_SESSIONS_TOKEN) private readonly sessions: PlatformUserSessions,
    @Inject(PLATFORM_USER_AUTH_CLOCK) private readonly clock: Clock,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<RequestWithSession>();
    const cookieHeader = request.headers.cookie;
    let tokens: UserSession | undefined = await this.sessions.readSession(
      typeof cookieHeader === 'string' ? cookieHeader : undefined,
    );
    if (!tokens) throw new UnauthorizedException('Not signed in, or the session has ended: sign in again');
    if (tokens.expiresAt.getTime() - RENEW_BEFORE_EXPIRY_MS <= this.clock.now()) {
      if (!tokens.refreshToken) throw new UnauthorizedException('The session has expired: sign in again');
      const session = tokens;
      try {
        // The renewed tokens stay in the session they were read from: its id, its end, and its ID token for logout.
        const renewed = await this.refreshOnce(session.refreshToken!);
        tokens = {
          ...renewed,
          idToken: renewed.idToken ?? session.idToken,
          sessionId: session.sessionId,
          sessionExpiresAt: session.sessionExpiresAt,
        };
      } catch (error) {
        if (isUserAuthError(error) && error.reason === 'invalid_grant') {
          setCookies(http.getResponse<HeaderWritable>(), [this.sessions.clearSessionCookie()]);
          throw new UnauthorizedException('The session can no longer be renewed: sign in again');
        }
        throw error;
      }
      setCookies(http.getResponse<HeaderWritable>(), [await this.sessions.sessionCookie(tokens)]);
    }
    request[PLATFORM_USER_REQUEST_KEY] = tokens;
    return true;
  }

  private refreshOnce(refreshToken: string): Promise<UserTokens> {
    const now = this.clock.now();
    for (const [key, entry] of this.refreshing)
      if (entry.until !== undefined && entry.until <= now) this.refreshing.delete(key);
    const key = createHash('sha256').update(refreshToken).digest('base64url');
    const known = this.refreshing.get(key);
    if (known) return known.refresh;
    const entry: { refresh: Promise<UserTokens>; until?: number } = {
      refresh: this.auth.refresh(refreshToken).then(
        (tokens) => {
          entry.until = this.clock.now() + REFRESH_SHARED_FOR_MS;
          return tokens;
        },
        (error: unknown) => {
          this.refreshing.delete(key);
          throw error;
        },
      ),
    };
    this.refreshing.set(key, entry);
    return entry.refresh;
  }
}
/** The signed-in user's tokens, in a handler behind `PlatformUserGuard`. */
export const PlatformUser = createParamDecorator((_data: unknown, context: ExecutionContext): UserTokens => {
  const tokens = context.switchToHttp().getRequest<RequestWithSession>()[PLATFORM_USER_REQUEST_KEY];
  if (!tokens) throw new UnauthorizedException('@PlatformUser() needs @UseGuards(PlatformUserGuard) on the route');
  return tokens;
});
