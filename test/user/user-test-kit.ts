import { Test } from '@nestjs/testing';
import { expect } from 'vitest';
import { FakeClock, PlatformEmulator, type PlatformEmulatorOptions } from 'nestjs-platform-auth/testing';
import {
  PlatformUserAuth,
  PlatformUserAuthModule,
  PlatformUserSessions,
  type PlatformUserAuthOptions,
} from 'nestjs-platform-auth/user';

export const CLIENT_ID = 'web-app';
/** Never listened on: tests follow the redirects by hand and only read the `Location`. */
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const STATE_SECRET = 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha'; // 32 bytes, test only
export const DECISION_PATH = '/loginservice/connect/authorize/decision';

export interface UserFixture {
  platform: PlatformEmulator;
  clock: FakeClock;
  auth: PlatformUserAuth;
  sessions: PlatformUserSessions;
  close(): Promise<void>;
}

/** An emulator with a registered user client, and the library pointed at it with a fake clock. */
export async function startUserFixture(
  options: Partial<PlatformUserAuthOptions> = {},
  emulatorOptions: PlatformEmulatorOptions = {},
): Promise<UserFixture> {
  const clock = new FakeClock();
  const platform = await PlatformEmulator.start({ now: () => clock.now(), ...emulatorOptions });
  platform.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] });
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformUserAuthModule.forRoot({
        baseUrl: platform.url,
        clientId: CLIENT_ID,
        redirectUri: REDIRECT_URI,
        scope: 'profile',
        stateSecret: STATE_SECRET,
        clock,
        ...options,
      }),
    ],
  }).compile();
  return {
    platform,
    clock,
    auth: moduleRef.get(PlatformUserAuth),
    sessions: moduleRef.get(PlatformUserSessions),
    close: async () => {
      await moduleRef.close();
      await platform.close();
    },
  };
}

/** Opens the sign-in page at `authorizeUrl`, as a browser would, and returns the pending request's id. */
export async function openSignInPage(authorizeUrl: string): Promise<{ requestId: string; html: string }> {
  const page = await fetch(authorizeUrl, { redirect: 'manual' });
  const html = await page.text();
  expect(page.status, html).toBe(200);
  const requestId = /name="request" value="([^"]+)"/.exec(html)?.[1];
  expect(requestId).toBeDefined();
  return { requestId: requestId!, html };
}

/** Submits the sign-in page's form; returns where the emulator sends the browser (the callback URL). */
export async function decide(
  platform: PlatformEmulator,
  requestId: string,
  decision: 'approve' | 'deny',
  user = 'user-alice',
): Promise<string> {
  const response = await fetch(platform.url + DECISION_PATH, {
    method: 'POST',
    body: new URLSearchParams({ request: requestId, user, decision }),
    redirect: 'manual',
  });
  expect(response.status, await response.text()).toBe(303);
  return response.headers.get('location')!;
}

/** The whole browser side of a sign-in: authorize URL in, callback URL out. */
export async function signIn(
  platform: PlatformEmulator,
  authorizeUrl: string,
  decision: 'approve' | 'deny' = 'approve',
  user = 'user-alice',
): Promise<string> {
  const { requestId } = await openSignInPage(authorizeUrl);
  return decide(platform, requestId, decision, user);
}

export { restoreEnv } from '../support/environment.js';
