import { BadRequestException, Controller, Get, Inject, Redirect, Req, Res, UseGuards } from '@nestjs/common';
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

  @Get('logout')
  @Redirect('/login', 302)
  logout(@Res({ passthrough: true }) response: HeaderWritable): void {
    setCookies(response, [this.sessions.clearSessionCookie()]);
  }
}
