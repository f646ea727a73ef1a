import { Controller, Get, Module, UseGuards, type INestApplication } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import {
  PlatformUser,
  PlatformUserAuth,
  PlatformUserAuthModule,
  PlatformUserGuard,
  PlatformUserSessions,
  USER_SESSION_COOKIE,
  type UserTokens,
} from 'nestjs-platform-auth/user';
import { CLIENT_ID, REDIRECT_URI, STATE_SECRET, signIn } from './user-test-kit.js';

@Controller()
class ProfileController {
  @Get('profile')
  @UseGuards(PlatformUserGuard)
  profile(@PlatformUser() user: UserTokens): { token: string; expiresAt: string } {
    return { token: user.accessToken, expiresAt: user.expiresAt.toISOString() };
  }
}

describe.each(['express', 'fastify'] as const)('PlatformUserGuard and @PlatformUser() on %s', (kind) => {
  let clock: FakeClock;
  let platform: PlatformEmulator;
  let app: INestApplication;
  let auth: PlatformUserAuth;
  let sessions: PlatformUserSessions;

  beforeEach(async () => {
    clock = new FakeClock();
    platform = await PlatformEmulator.start({ now: () => clock.now() });
    platform.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] });
    @Module({
      imports: [
        PlatformUserAuthModule.forRoot({
          baseUrl: platform.url,
          clientId: CLIENT_ID,
          redirectUri: REDIRECT_URI,
          stateSecret: STATE_SECRET,
          clock,
        }),
      ],
      controllers: [ProfileController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app =
      kind === 'express'
        ? moduleRef.createNestApplication({ logger: false })
        : moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    await app.init();
    if (kind === 'fastify') await (app as NestFastifyApplication).getHttpAdapter().getInstance().ready();
    auth = app.get(PlatformUserAuth);
    sessions = app.get(PlatformUserSessions);
  });
  afterEach(async () => {
    await app.close();
    await platform.close();
  });

  async function signedInCookie(): Promise<{ cookie: string; tokens: UserTokens }> {
    const { url, transaction } = await auth.createAuthorizationRequest();
    const tokens = await auth.completeAuthorization(await signIn(platform, url), transaction);
    const setCookie = await sessions.sessionCookie(tokens);
    return { cookie: setCookie.split(';')[0], tokens };
  }

  it('answers 401 without a session, or with one that was altered', async () => {
    await request(app.getHttpServer()).get('/profile').expect(401);
    const { cookie } = await signedInCookie();
    await request(app.getHttpServer())
      .get('/profile')
      .set('Cookie', cookie.slice(0, -3) + 'AAA')
      .expect(401);
  });

  it("hands the handler the user's token from the encrypted session", async () => {
    const { cookie, tokens } = await signedInCookie();
    const response = await request(app.getHttpServer()).get('/profile').set('Cookie', `other=1; ${cookie}`).expect(200);
    expect(response.body).toEqual({ token: tokens.accessToken, expiresAt: tokens.expiresAt.toISOString() });
    expect(response.headers['set-cookie']).toBeUndefined();
    // The session value itself does not show the token.
    expect(cookie).not.toContain(tokens.accessToken);
  });

  it('renews an expiring token with the refresh token and sets the new session cookie', async () => {
    const { cookie, tokens } = await signedInCookie();
    clock.advance(590_000);
    const response = await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(200);
    const body = response.body as { token: string };
    expect(body.token).not.toBe(tokens.accessToken);
    const setCookie = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
    expect(setCookie).toHaveLength(1);
    expect(setCookie[0]).toMatch(
      // The session still ends 8 hours after sign-in: 590 s of it have passed.
      new RegExp(`^${USER_SESSION_COOKIE}=[^;]+; Path=/; Max-Age=${28800 - 590}; HttpOnly; Secure; SameSite=Lax$`),
    );
    expect(platform.journal.at(-1)).toMatchObject({ grantType: 'refresh_token', verdict: 'accepted' });

    // The old cookie's refresh token was rotated away: once the short sharing window for requests still in flight
    // has passed, presenting it again ends the session.
    clock.advance(11_000);
    const replay = await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(401);
    expect(String(replay.headers['set-cookie'])).toMatch(new RegExp(`^${USER_SESSION_COOKIE}=; Path=/; Max-Age=0`));
  });

  it('shares one refresh between concurrent requests of one session, so rotation does not look like a replay', async () => {
    const { cookie } = await signedInCookie();
    clock.advance(590_000);
    const refreshesBefore = platform.journal.filter((entry) => entry.grantType === 'refresh_token').length;
    const responses = await Promise.all(
      [1, 2, 3].map(() => request(app.getHttpServer()).get('/profile').set('Cookie', cookie)),
    );
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(new Set(responses.map((response) => (response.body as { token: string }).token)).size).toBe(1);
    const refreshes = platform.journal.filter((entry) => entry.grantType === 'refresh_token').length;
    expect(refreshes - refreshesBefore).toBe(1);
  });
});
