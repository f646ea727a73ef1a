import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Body,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Module,
  Post,
  Redirect,
  Req,
  Res,
  UseGuards,
  type INestApplication,
} from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformUser,
  PlatformUserAuth,
  PlatformUserAuthModule,
  PlatformUserGuard,
  PlatformUserSessions,
  setCookies,
  type HeaderWritable,
  type UserTokens,
} from 'nestjs-platform-auth/user';
import { startOidcProvider, type OidcProviderFixture } from '../user/oidc-provider.kit.js';
import { launchChromium } from '../support/chromium.js';

/** A port nobody listens on right now: the redirect URIs must be registered before the apps start. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface CookieRequest {
  url: string;
  headers: { cookie?: string };
}

/** The app of docs/user-sign-in.md's routes, with a logout page whose form the browser posts. */
@Controller()
class UserController {
  constructor(
    private readonly auth: PlatformUserAuth,
    private readonly sessions: PlatformUserSessions,
  ) {}

  @Get('login')
  @Redirect()
  async login(@Res({ passthrough: true }) res: HeaderWritable) {
    const { url, transaction } = await this.auth.createAuthorizationRequest();
    setCookies(res, [this.sessions.transactionCookie(transaction)]);
    return { url, statusCode: 302 };
  }

  @Get('callback')
  @Redirect()
  async callback(@Req() req: CookieRequest, @Res({ passthrough: true }) res: HeaderWritable) {
    const tokens = await this.auth.completeAuthorization(req.url, this.sessions.readTransaction(req.headers.cookie));
    setCookies(res, [this.sessions.clearTransactionCookie(), await this.sessions.sessionCookie(tokens)]);
    return { url: '/me', statusCode: 302 };
  }

  @Get('me')
  @UseGuards(PlatformUserGuard)
  me(@PlatformUser() user: UserTokens) {
    const claims = JSON.parse(Buffer.from(user.idToken!.split('.')[1], 'base64url').toString()) as { sub: string };
    return { sub: claims.sub, refreshable: user.refreshToken !== undefined };
  }

  @Get('logout')
  @Header('content-type', 'text/html; charset=utf-8')
  logoutPage() {
    return '<!doctype html><title>Sign out</title><form method="post" action="/logout"><input type="hidden" name="confirm" value="yes"><button type="submit">Sign out</button></form>';
  }

  @Post('logout')
  @Redirect()
  async logout(
    @Req() req: CookieRequest,
    @Body() body: { confirm?: string },
    @Res({ passthrough: true }) res: HeaderWritable,
  ) {
    const session = await this.sessions.readSession(req.headers.cookie);
    if (!session || body.confirm !== 'yes') throw new ForbiddenException();
    const { endSessionUrl, refreshTokenRevoked } = await this.auth.logout(session, {
      postLogoutRedirectUri: new URL('/signed-out', `http://${(req as { headers: { host?: string } }).headers.host}`)
        .href,
    });
    revoked.push(refreshTokenRevoked);
    setCookies(res, [this.sessions.clearSessionCookie()]);
    return { url: endSessionUrl ?? '/', statusCode: 303 };
  }

  @Get('signed-out')
  signedOut() {
    return { signedOut: true };
  }
}

const revoked: boolean[] = [];
const kinds = ['express', 'fastify'] as const;
const ports: Record<(typeof kinds)[number], number> = { express: 0, fastify: 0 };
const userDataDir = mkdtempSync(join(tmpdir(), 'platform-auth-chromium-'));
let op: OidcProviderFixture;
let browser: BrowserContext;

beforeAll(async () => {
  for (const kind of kinds) ports[kind] = await freePort();
  op = await startOidcProvider([
    {
      client_id: 'web-app',
      token_endpoint_auth_method: 'none',
      redirect_uris: kinds.map((kind) => `http://127.0.0.1:${ports[kind]}/callback`),
      post_logout_redirect_uris: kinds.map((kind) => `http://127.0.0.1:${ports[kind]}/signed-out`),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ]);
  browser = await launchChromium(userDataDir);
});

afterAll(async () => {
  await browser?.close();
  await op?.close();
  rmSync(userDataDir, { recursive: true, force: true });
});

describe.each(kinds)('user sign-in at oidc-provider in headless Chromium, on %s', (kind) => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    base = `http://127.0.0.1:${ports[kind]}`;
    @Module({
      imports: [
        PlatformUserAuthModule.forRoot({
          baseUrl: op.issuer,
          discovery: true,
          clientId: 'web-app',
          redirectUri: `${base}/callback`,
          scope: 'openid offline_access',
          stateSecret: 'Tg6nB1vX8qM3wR9kL2pZ5cH7jD0sF4yA',
        }),
      ],
      controllers: [UserController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app =
      kind === 'express'
        ? moduleRef.createNestApplication({ logger: false, forceCloseConnections: true })
        : moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), {
            logger: false,
            forceCloseConnections: true,
          });
    await app.listen(ports[kind], '127.0.0.1');
  });

  const appCookies = async () =>
    (await browser.cookies(base)).map((c) => c.name).filter((name) => name.includes('platform_user'));

  afterAll(async () => {
    await app?.close();
    await browser.clearCookies();
  });

  it('signs in on the provider’s login and consent pages, calls a guarded route, and logs out there too', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/login`);
    expect(page.url().startsWith(`${op.issuer}/interaction/`)).toBe(true);
    await page.locator('input[name="login"]').fill(`carol-${kind}`);
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    // The consent page: offline_access made the library ask for it.
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${base}/me`);
    expect(JSON.parse(await page.locator('body').innerText())).toEqual({ sub: `carol-${kind}`, refreshable: true });
    // Cookies are per host, not per port: the provider's own (on 127.0.0.1 too) are left out.
    expect(await appCookies()).toEqual(['__Host-platform_user_session']);

    await page.goto(`${base}/logout`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The provider's own confirmation, reached with id_token_hint; then back to the app.
    await page.waitForURL((url) => url.href.startsWith(`${op.issuer}/session/end`));
    await page.getByRole('button', { name: /yes/i }).click();
    await page.waitForURL(`${base}/signed-out`);
    expect(revoked.at(-1)).toBe(true);
    expect(await appCookies()).toEqual([]);
    const me = await page.goto(`${base}/me`);
    expect(me?.status()).toBe(401);
    await page.close();
  });
});
