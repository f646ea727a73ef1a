import { Controller, Get, Module, UseGuards, type INestApplication } from '@nestjs/common';
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
  type PlatformUserAuthOptions,
  type UserTokens,
} from 'nestjs-platform-auth/user';
import { CLIENT_ID, REDIRECT_URI, STATE_SECRET, signIn } from './user-test-kit.js';

@Controller()
class ProfileController {
  @Get('profile')
  @UseGuards(PlatformUserGuard)
  profile(@PlatformUser() user: UserTokens): { token: string } {
    return { token: user.accessToken };
  }
}

let clock: FakeClock;
let platform: PlatformEmulator;
let app: INestApplication;
let auth: PlatformUserAuth;
let sessions: PlatformUserSessions;

async function startApp(options: Partial<PlatformUserAuthOptions> = {}): Promise<void> {
  @Module({
    imports: [
      PlatformUserAuthModule.forRoot({
        baseUrl: platform.url,
        clientId: CLIENT_ID,
        redirectUri: REDIRECT_URI,
        stateSecret: STATE_SECRET,
        clock,
        ...options,
      }),
    ],
    controllers: [ProfileController],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  auth = app.get(PlatformUserAuth);
  sessions = app.get(PlatformUserSessions);
}

beforeEach(async () => {
  clock = new FakeClock();
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] });
});
afterEach(async () => {
  await app?.close();
  await platform.close();
});

/** Signs in on the emulator and returns the `name=value` of the session cookie the app would set. */
async function signedInCookie(user = 'user-alice'): Promise<{ cookie: string; tokens: UserTokens }> {
  const { url, transaction } = await auth.createAuthorizationRequest();
  const tokens = await auth.completeAuthorization(await signIn(platform, url, 'approve', user), transaction);
  return { cookie: (await sessions.sessionCookie(tokens)).split(';')[0], tokens };
}

function setCookieOf(response: request.Response): string[] {
  return ([] as string[]).concat(response.headers['set-cookie'] ?? []);
}

const refreshes = () => platform.journal.filter((entry) => entry.grantType === 'refresh_token').length;

describe('the session lifetime runs from sign-in', () => {
  it('a session of one hour ends an hour after sign-in, however often it was refreshed', async () => {
    await startApp({ sessionLifetimeSeconds: 3600 });
    let { cookie } = await signedInCookie();
    const signedInAt = clock.now();
    // Every 590 s the access token is about to expire and the guard refreshes it, setting a new cookie.
    while (clock.now() + 590_000 < signedInAt + 3600_000) {
      clock.advance(590_000);
      const response = await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(200);
      const renewed = setCookieOf(response);
      expect(renewed).toHaveLength(1);
      const maxAge = Number(/Max-Age=(\d+)/.exec(renewed[0])?.[1]);
      // The cookie lives until the session's end, never a fresh full lifetime.
      expect(maxAge).toBe(Math.floor((signedInAt + 3600_000 - clock.now()) / 1000));
      cookie = renewed[0].split(';')[0];
    }
    const before = refreshes();
    clock.advance(signedInAt + 3600_000 - clock.now());
    await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(401);
    // Five hours on, still closed, and nothing was refreshed for it.
    clock.advance(4 * 3600_000);
    await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(401);
    expect(refreshes()).toBe(before);
  });
});

describe('logout ends the session, not only the cookie', () => {
  it('a cookie copied before logout neither works nor refreshes afterwards', async () => {
    await startApp({ revocationPath: '/loginservice/connect/revocation' });
    const { cookie } = await signedInCookie();
    const copied = cookie;
    const session = await sessions.readSession(cookie);
    expect(session).toBeDefined();
    const result = await auth.logout(session!);
    expect(result.refreshTokenRevoked).toBe(true);
    expect(result.endSessionUrl).toBeUndefined();

    const before = refreshes();
    await request(app.getHttpServer()).get('/profile').set('Cookie', copied).expect(401);
    clock.advance(590_000);
    await request(app.getHttpServer()).get('/profile').set('Cookie', copied).expect(401);
    expect(refreshes()).toBe(before);
    // The platform agrees: the refresh token is revoked there too.
    await expect(auth.refresh(session!.refreshToken!)).rejects.toMatchObject({ reason: 'invalid_grant' });
  });

  it('without a revocation endpoint, this process still refuses the ended session', async () => {
    await startApp();
    const { cookie } = await signedInCookie();
    const session = await sessions.readSession(cookie);
    const result = await auth.logout(session!);
    expect(result.refreshTokenRevoked).toBe(false);
    const before = refreshes();
    clock.advance(590_000);
    await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(401);
    expect(refreshes()).toBe(before);
  });
});

describe('cookie names and duplicates', () => {
  it('Secure cookies carry the __Host- prefix, Path=/ and no Domain', async () => {
    await startApp();
    const { transaction } = await auth.createAuthorizationRequest();
    expect(sessions.transactionCookie(transaction)).toMatch(
      /^__Host-platform_user_tx=[^;]+; Path=\/; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/,
    );
    const { cookie } = await signedInCookie();
    expect(cookie.startsWith('__Host-platform_user_session=')).toBe(true);
  });

  it('without Secure cookies the names have no prefix (browsers refuse __Host- without Secure)', async () => {
    await startApp({ secureCookies: false });
    const { cookie } = await signedInCookie();
    expect(cookie.startsWith('platform_user_session=')).toBe(true);
    await request(app.getHttpServer()).get('/profile').set('Cookie', cookie).expect(200);
  });

  it('a session cookie planted under the unprefixed name from a sibling subdomain is ignored', async () => {
    await startApp();
    const victim = await signedInCookie('user-alice');
    const attacker = await signedInCookie('user-bob');
    const planted = attacker.cookie.replace(/^__Host-/, '');
    const response = await request(app.getHttpServer())
      .get('/profile')
      .set('Cookie', `${planted}; ${victim.cookie}`)
      .expect(200);
    expect((response.body as { token: string }).token).toBe(victim.tokens.accessToken);
  });

  it('two session cookies of one name are refused as ambiguous, whichever comes first', async () => {
    await startApp({ secureCookies: false });
    const victim = await signedInCookie('user-alice');
    const attacker = await signedInCookie('user-bob');
    for (const header of [`${attacker.cookie}; ${victim.cookie}`, `${victim.cookie}; ${attacker.cookie}`])
      await request(app.getHttpServer()).get('/profile').set('Cookie', header).expect(401);
    expect(await sessions.readSession(`${attacker.cookie}; ${victim.cookie}`)).toBeUndefined();
  });
});
