import { createHash, timingSafeEqual } from 'node:crypto';
import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Inject,
  Post,
  Redirect,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import type { ConfigType } from '@nestjs/config';
import {
  PlatformUser,
  PlatformUserAuth,
  PlatformUserGuard,
  PlatformUserSessions,
  isUserAuthError,
  platformUserAuthConfig,
  setCookies,
  type HeaderWritable,
  type UserSession,
  type UserTokens,
} from 'nestjs-platform-auth/user';

interface IncomingRequest {
  url: string;
  /** Express keeps the full path here when the app is mounted below a prefix. */
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * `/login` sends the browser to the platform, `/callback` finishes the sign-in and stores the user's tokens in an
 * encrypted session cookie, `/me` calls the platform as the signed-in user. Works on Express and Fastify.
 */
@Controller()
export class UserController {
  constructor(
    private readonly auth: PlatformUserAuth,
    private readonly sessions: PlatformUserSessions,
    @Inject(platformUserAuthConfig.KEY) private readonly config: ConfigType<typeof platformUserAuthConfig>,
  ) {}

  @Get('login')
  @Redirect()
  async login(@Res({ passthrough: true }) response: HeaderWritable): Promise<{ url: string; statusCode: number }> {
    const { url, transaction } = await this.auth.createAuthorizationRequest();
    setCookies(response, [this.sessions.transactionCookie(transaction)]);
    return { url, statusCode: 302 };
  }

  @Get('callback')
  @Redirect()
  async callback(
    @Req() request: IncomingRequest,
    @Res({ passthrough: true }) response: HeaderWritable,
  ): Promise<{ url: string; statusCode: number }> {
    const cookie = typeof request.headers.cookie === 'string' ? request.headers.cookie : undefined;
    try {
      const tokens = await this.auth.completeAuthorization(
        request.originalUrl ?? request.url,
        this.sessions.readTransaction(cookie),
      );
      setCookies(response, [this.sessions.clearTransactionCookie(), await this.sessions.sessionCookie(tokens)]);
      return { url: '/me', statusCode: 302 };
    } catch (error) {
      if (!isUserAuthError(error)) throw error;
      setCookies(response, [this.sessions.clearTransactionCookie()]);
      // The message names the cause and never a code or token; `reason` is for programs.
      throw new BadRequestException({ error: error.reason, message: error.message, retry: '/login' });
    }
  }

  /** Who the platform says the signed-in user is (its placeholder `GET /api/me`). */
  @Get('me')
  @UseGuards(PlatformUserGuard)
  async me(@PlatformUser() user: UserTokens): Promise<unknown> {
    const response = await fetch(new URL('/api/me', this.config.baseUrl), {
      headers: { authorization: `Bearer ${user.accessToken}` },
      signal: AbortSignal.timeout(10_000),
    });
    return { platformStatus: response.status, user: await response.json(), tokenExpiresAt: user.expiresAt };
  }

  /**
   * A page with the logout button: logging out changes state, so it is a POST (a link or an image on another site
   * cannot trigger it), carrying a token bound to the session that another site cannot know.
   */
  @Get('logout')
  @Header('content-type', 'text/html; charset=utf-8')
  // No form-action: the logout may end at the platform's end-session endpoint, another origin.
  @Header('content-security-policy', "default-src 'none'")
  @Header('cache-control', 'no-store')
  async logoutPage(@Req() request: IncomingRequest): Promise<string> {
    const session = await this.sessions.readSession(cookieOf(request));
    if (!session) return '<!doctype html><title>Signed out</title><p>Not signed in. <a href="/login">Sign in</a></p>';
    return `<!doctype html><title>Sign out</title><form method="post" action="/logout"><input type="hidden" name="csrf" value="${logoutToken(session)}"><button type="submit">Sign out</button></form>`;
  }

  /**
   * Ends the session: refused (403) unless the request comes from this app's own page (`Origin` / `Sec-Fetch-Site`)
   * with the session's logout token. Revokes the refresh token at the platform when it can, refuses the session from
   * now on, clears the cookie and, when the platform has an end-session endpoint, sends the browser there.
   */
  @Post('logout')
  @Redirect()
  async logout(
    @Req() request: IncomingRequest,
    @Body() body: { csrf?: unknown } | undefined,
    @Res({ passthrough: true }) response: HeaderWritable,
  ): Promise<{ url: string; statusCode: number }> {
    const session = await this.sessions.readSession(cookieOf(request));
    if (!sameOrigin(request) || !session || !matches(body?.csrf, logoutToken(session)))
      throw new ForbiddenException('Sign out from the logout page of this app');
    const { endSessionUrl } = await this.auth.logout(session, {
      ...(process.env.PLATFORM_USER_POST_LOGOUT_REDIRECT_URI
        ? { postLogoutRedirectUri: process.env.PLATFORM_USER_POST_LOGOUT_REDIRECT_URI }
        : {}),
    });
    setCookies(response, [this.sessions.clearSessionCookie()]);
    return { url: endSessionUrl ?? '/login', statusCode: 303 };
  }
}

function cookieOf(request: IncomingRequest): string | undefined {
  return typeof request.headers.cookie === 'string' ? request.headers.cookie : undefined;
}

/** The session's logout token: a hash of its random id, which only the encrypted cookie holds. */
function logoutToken(session: UserSession): string {
  return createHash('sha256').update(`sample-app logout ${session.sessionId}`).digest('base64url');
}

function matches(given: unknown, expected: string): boolean {
  if (typeof given !== 'string' || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/** A browser's POST from this app's own page: `Sec-Fetch-Site: same-origin`, or an `Origin` of this host. */
function sameOrigin(request: IncomingRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}
