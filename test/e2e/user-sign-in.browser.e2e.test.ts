import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { startEmbeddedPlatform } from '../../sample-app/embedded-platform.js';
import { launchChromium } from '../support/chromium.js';
import { restoreEnv } from '../support/environment.js';

const saved = { ...process.env };
const userDataDir = mkdtempSync(join(tmpdir(), 'platform-auth-chromium-'));
/** Screenshots go here: the OS temp directory, never the repository. */
const artifactDir = mkdtempSync(join(tmpdir(), 'platform-auth-e2e-artifacts-'));
let platform: PlatformEmulator;
let app: INestApplication;
let browser: BrowserContext;
let base: string;

/** A port nobody listens on right now: the redirect URI must be registered before the app starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  platform = await startEmbeddedPlatform(port, () => undefined);
  // Imported once the environment names a user client, which is what makes the sample app load its user module.
  const { AppModule } = await import('../../sample-app/src/app.module.js');
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.listen(port, '127.0.0.1');
  base = `http://127.0.0.1:${port}`;
  browser = await launchChromium(userDataDir);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await platform?.close();
  restoreEnv(saved);
  rmSync(userDataDir, { recursive: true, force: true });
  rmSync(artifactDir, { recursive: true, force: true });
});

describe('user sign-in in a real browser (headless Chromium)', () => {
  it('opens /login, signs in on the emulator page, lands on /me and sees the user', async () => {
    const page = await browser.newPage();
    // A CSP that blocked the page's own style or form would show here (a missing favicon would not).
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) blocked.push(message.text());
    });

    await page.goto(`${base}/login`);
    expect(page.url().startsWith(platform.authorizeUrl + '?')).toBe(true);
    await expect(page.title()).resolves.toBe('Sign in to the platform');
    await page.getByLabel('Bob Example').check();
    await page.screenshot({ path: join(artifactDir, 'sign-in-page.png') });

    await Promise.all([page.waitForURL(`${base}/me`), page.getByRole('button', { name: 'Approve' }).click()]);
    const body = JSON.parse((await page.locator('body').innerText()).trim()) as Record<string, unknown>;
    expect(body).toMatchObject({
      platformStatus: 200,
      user: { sub: 'user-bob', name: 'Bob Example', clientId: 'sample-app' },
    });

    // The session is an HttpOnly cookie the page cannot read; the transaction cookie is gone.
    const cookies = await browser.cookies(base);
    expect(cookies.map((c) => c.name)).toEqual(['__Host-platform_user_session']);
    expect(cookies[0]).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
    await expect(page.evaluate('document.cookie')).resolves.toBe('');
    expect(blocked).toEqual([]);
    expect(platform.userJournal.map((r) => `${r.step}:${r.verdict}`)).toEqual([
      'authorize:accepted',
      'sign-in:accepted',
      'token:accepted',
      'me:accepted',
    ]);
  });

  it('logs out with a POST from its own page; a cross-site POST and the copied cookie get nowhere', async () => {
    const page = await browser.newPage();
    // Signed in from the test before.
    await expect(page.goto(`${base}/me`).then((r) => r?.status())).resolves.toBe(200);
    const [session] = await browser.cookies(base);
    const copied = `${session.name}=${session.value}`;
    // Another site's form: no logout token, and the browser says where it comes from.
    const forged = await fetch(`${base}/logout`, {
      method: 'POST',
      headers: {
        cookie: copied,
        origin: 'https://attacker.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'csrf=guess',
      redirect: 'manual',
    });
    expect(forged.status).toBe(403);
    const withoutToken = await fetch(`${base}/logout`, {
      method: 'POST',
      headers: { cookie: copied, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
      redirect: 'manual',
    });
    expect(withoutToken.status).toBe(403);
    await expect(page.goto(`${base}/me`).then((r) => r?.status())).resolves.toBe(200);

    await page.goto(`${base}/logout`);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(platform.authorizeUrl)),
      page.getByRole('button', { name: 'Sign out' }).click(),
    ]);
    // Back at the sign-in (/login set a new transaction cookie); the session cookie is gone.
    expect((await browser.cookies(base)).map((c) => c.name)).toEqual(['__Host-platform_user_tx']);
    const afterwards = await fetch(`${base}/me`, { headers: { cookie: copied } });
    expect(afterwards.status).toBe(401);
  });

  it('after Deny, the callback says access_denied and /me stays closed', async () => {
    await browser.clearCookies();
    const page = await browser.newPage();
    await page.goto(`${base}/login`);
    const response = await Promise.all([
      page.waitForURL(/\/callback\?/),
      page.getByRole('button', { name: 'Deny' }).click(),
    ]).then(() => page.locator('body').innerText());
    expect(JSON.parse(response)).toMatchObject({ error: 'access_denied' });
    const me = await page.goto(`${base}/me`);
    expect(me?.status()).toBe(401);
  });
});
