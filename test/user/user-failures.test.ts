import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUserAuthError, type UserAuthError, type UserAuthFailure } from 'nestjs-platform-auth/user';
import { PlatformAuthError } from 'nestjs-platform-auth';
import { expectNoSecrets } from '../support/leak-check.js';
import { json, startScriptedTokenServer, type ScriptedTokenServer } from '../support/scripted-token-server.js';
import { REDIRECT_URI, signIn, startUserFixture, type UserFixture } from './user-test-kit.js';

/** The error `promise` rejects with, checked to be a UserAuthError of `reason` that shows none of `secrets`. */
async function failure(
  promise: Promise<unknown>,
  reason: UserAuthFailure,
  secrets: readonly (string | undefined)[],
): Promise<UserAuthError> {
  const error = await promise.then(
    () => expect.fail(`expected a ${reason} failure`),
    (e: unknown) => e,
  );
  expect(isUserAuthError(error), String(error)).toBe(true);
  expect(error).toBeInstanceOf(PlatformAuthError);
  const typed = error as UserAuthError;
  expect(typed.reason, typed.message).toBe(reason);
  expect(typed.code).toBe('PLATFORM_AUTH_USER');
  expectNoSecrets(typed, secrets);
  return typed;
}

function paramsOf(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url).searchParams);
}

describe('sign-in failures against the emulator', () => {
  let fx: UserFixture;
  beforeEach(async () => {
    fx = await startUserFixture();
  });
  afterEach(() => fx.close());

  it('state mismatch: a callback meant for another sign-in', async () => {
    const first = await fx.auth.createAuthorizationRequest();
    const second = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, first.url);
    const { code, state } = paramsOf(callback);
    await failure(fx.auth.completeAuthorization(callback, second.transaction), 'state_mismatch', [
      code,
      state,
      second.transaction,
    ]);
    // The code was not spent: the right transaction still finishes.
    await expect(fx.auth.completeAuthorization(callback, first.transaction)).resolves.toBeDefined();
  });

  it('state mismatch: a callback without state, or with state twice', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = new URL(await signIn(fx.platform, url));
    const withoutState = new URL(callback);
    withoutState.searchParams.delete('state');
    await failure(fx.auth.completeAuthorization(withoutState, transaction), 'state_mismatch', []);
    const twice = new URL(callback);
    twice.searchParams.append('state', callback.searchParams.get('state')!);
    await failure(fx.auth.completeAuthorization(twice, transaction), 'state_mismatch', []);
  });

  it('transaction tampered, missing or from another secret', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    const parts = transaction.split('.');
    const flip = (s: string) => (s[5] === 'A' ? 'B' : 'A');
    parts[3] = parts[3].slice(0, 5) + flip(parts[3]) + parts[3].slice(6);
    await failure(fx.auth.completeAuthorization(callback, parts.join('.')), 'transaction_invalid', [transaction]);
    await failure(fx.auth.completeAuthorization(callback, undefined), 'transaction_invalid', []);
    await failure(fx.auth.completeAuthorization(callback, 'not-a-jwe'), 'transaction_invalid', []);
    const other = await startUserFixture({ stateSecret: 'a-different-secret-of-32-bytes-or-more!' });
    try {
      const foreign = await other.auth.createAuthorizationRequest();
      await failure(fx.auth.completeAuthorization(callback, foreign.transaction), 'transaction_invalid', []);
    } finally {
      await other.close();
    }
  });

  it('transaction expired: the sign-in took longer than ten minutes', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    fx.clock.advance(600_000);
    await failure(fx.auth.completeAuthorization(callback, transaction), 'transaction_expired', [
      paramsOf(callback).code,
    ]);
  });

  it('access_denied: the user declined on the sign-in page', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url, 'deny');
    expect(paramsOf(callback)).toMatchObject({ error: 'access_denied' });
    const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'access_denied', []);
    expect(error.oauthError).toBe('access_denied');
    expect(fx.platform.userJournal.map((r) => `${r.step}:${r.verdict}`)).toEqual([
      'authorize:accepted',
      'sign-in:denied',
    ]);
  });

  it('invalid_scope sent back to the registered redirect URI: a refusal by the server, not by the user', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest({ scope: 'openid' });
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(302);
    const callback = page.headers.get('location')!;
    expect(callback.startsWith(REDIRECT_URI + '?')).toBe(true);
    const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'server_refused', []);
    expect(error.oauthError).toBe('invalid_scope');
    expect(error.oauthErrorDescription).toMatch(/ID tokens/);
    expect(error.hint).toMatch(/No user declined/);
    expect(error.message).not.toMatch(/declined on the platform/);
  });

  it('access_denied without a description saying a user declined is reported as the server refusing', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const state = new URL(url).searchParams.get('state')!;
    for (const description of [undefined, 'not allowed']) {
      const callback = new URL(REDIRECT_URI);
      callback.searchParams.set('error', 'access_denied');
      if (description) callback.searchParams.set('error_description', description);
      callback.searchParams.set('state', state);
      callback.searchParams.set('iss', fx.platform.url);
      const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'server_refused', []);
      expect(error.message).toMatch(/scope the client may not ask for.*client not allowed/);
    }
  });

  it('other error responses (server_error) stay authorization_error', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = new URL(REDIRECT_URI);
    callback.searchParams.set('error', 'server_error');
    callback.searchParams.set('state', new URL(url).searchParams.get('state')!);
    callback.searchParams.set('iss', fx.platform.url);
    const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'authorization_error', []);
    expect(error.oauthError).toBe('server_error');
  });

  it('invalid_callback: no code, or an iss other than the platform (mix-up defence)', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = new URL(await signIn(fx.platform, url));
    const code = callback.searchParams.get('code')!;
    const noCode = new URL(callback);
    noCode.searchParams.delete('code');
    await failure(fx.auth.completeAuthorization(noCode, transaction), 'invalid_callback', []);
    const foreignIssuer = new URL(callback);
    foreignIssuer.searchParams.set('iss', 'https://attacker.example');
    await failure(fx.auth.completeAuthorization(foreignIssuer, transaction), 'invalid_callback', [code]);
  });

  it('invalid_grant: a code used twice (and the tokens of the first use are revoked)', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    const tokens = await fx.auth.completeAuthorization(callback, transaction);
    const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'invalid_grant', [
      paramsOf(callback).code,
      tokens.accessToken,
      tokens.refreshToken,
    ]);
    expect(error).toMatchObject({ status: 400, oauthError: 'invalid_grant' });
    const me = await fetch(`${fx.platform.url}/api/me`, { headers: { authorization: `Bearer ${tokens.accessToken}` } });
    expect(me.status).toBe(401);
  });

  it('invalid_grant: a code older than 60 seconds', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    fx.clock.advance(60_000);
    await failure(fx.auth.completeAuthorization(callback, transaction), 'invalid_grant', [paramsOf(callback).code]);
  });

  it('invalid_grant: a refresh token used twice revokes the rotated one too', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const tokens = await fx.auth.completeAuthorization(await signIn(fx.platform, url), transaction);
    const renewed = await fx.auth.refresh(tokens.refreshToken!);
    await failure(fx.auth.refresh(tokens.refreshToken!), 'invalid_grant', [tokens.refreshToken]);
    await failure(fx.auth.refresh(renewed.refreshToken!), 'invalid_grant', [renewed.refreshToken]);
  });

  it('bad responses from the token endpoint: HTML, broken JSON, a 500 without a body', async () => {
    for (const fault of [
      { kind: 'html' },
      { kind: 'malformed-json' },
      { kind: 'status', status: 500, body: '' },
      { kind: 'status', status: 200, body: { token_type: 'Bearer', expires_in: 600 } },
    ] as const) {
      const { url, transaction } = await fx.auth.createAuthorizationRequest();
      const callback = await signIn(fx.platform, url);
      fx.platform.injectFault(fault);
      await failure(fx.auth.completeAuthorization(callback, transaction), 'invalid_response', [
        paramsOf(callback).code,
      ]);
    }
  });

  it('token_error: another OAuth error, with the description cleaned', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    const { code } = paramsOf(callback);
    fx.platform.injectFault({
      kind: 'status',
      status: 400,
      body: { error: 'invalid_request', error_description: `bad code ${code}\r\nX-Injected: yes` },
    });
    const error = await failure(fx.auth.completeAuthorization(callback, transaction), 'token_error', [code]);
    expect(error.oauthError).toBe('invalid_request');
    expect(error.oauthErrorDescription).toBe('bad code [REDACTED] X-Injected: yes');
  });

  it('network_error and timeout', async () => {
    const slow = await startUserFixture({ requestTimeoutMs: 200 });
    try {
      const { url, transaction } = await slow.auth.createAuthorizationRequest();
      const callback = await signIn(slow.platform, url);
      slow.platform.injectFault({ kind: 'hang' });
      await failure(slow.auth.completeAuthorization(callback, transaction), 'timeout', [paramsOf(callback).code]);
    } finally {
      await slow.close();
    }
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    await fx.platform.close();
    await failure(fx.auth.completeAuthorization(callback, transaction), 'network_error', [paramsOf(callback).code]);
  });
});

describe('strict token response validation (a scripted token endpoint that records the verifier)', () => {
  let fx: UserFixture;
  let server: ScriptedTokenServer;
  beforeEach(async () => {
    server = await startScriptedTokenServer();
    fx = await startUserFixture({ tokenPath: '/token' });
  });
  afterEach(async () => {
    await fx.close();
    await server.close();
  });

  /** Signs in on the emulator, then lets the scripted server answer the code exchange. */
  async function exchangeWith(body: unknown): Promise<{ result: unknown; now: number }> {
    const scripted = await startUserFixture({ tokenPath: '/token', baseUrl: server.url, issuer: fx.platform.url });
    try {
      const { url, transaction } = await scripted.auth.createAuthorizationRequest();
      const callback = await signIn(fx.platform, url.replace(server.url, fx.platform.url));
      server.replies.push((res) => json(res, 200, body));
      const result = await scripted.auth.completeAuthorization(callback, transaction).catch((e: unknown) => {
        const form = server.forms.at(-1)!;
        expect(form.get('grant_type')).toBe('authorization_code');
        expectNoSecrets(e, [form.get('code_verifier')!, form.get('code')!, transaction]);
        return e;
      });
      return { result, now: scripted.clock.now() };
    } finally {
      await scripted.close();
    }
  }

  it.each([
    ['no access_token', { token_type: 'Bearer', expires_in: 60 }],
    ['a token type other than Bearer', { access_token: 'scripted-secret-token-1', token_type: 'mac', expires_in: 60 }],
    ['a DPoP token we did not ask for', { access_token: 'scripted-secret-token-2', token_type: 'DPoP' }],
    ['expires_in not a number', { access_token: 'scripted-secret-token-3', token_type: 'Bearer', expires_in: 'soon' }],
    ['an already expired token', { access_token: 'scripted-secret-token-4', token_type: 'Bearer', expires_in: 0 }],
    ['scope not a string', { access_token: 'scripted-secret-token-5', token_type: 'Bearer', scope: ['a'] }],
  ])('refuses %s', async (_name, body) => {
    const error = (await exchangeWith(body)).result as UserAuthError;
    expect(isUserAuthError(error), String(error)).toBe(true);
    expect(error.reason).toBe('invalid_response');
    expectNoSecrets(error, [(body as { access_token?: string }).access_token]);
  });

  it('uses the default lifetime when expires_in is absent, and sends code, verifier and redirect URI', async () => {
    const { result, now } = await exchangeWith({ access_token: 'x-token-123456', token_type: 'bearer' });
    expect((result as { expiresAt: Date }).expiresAt.getTime()).toBe(now + 600_000);
    const form = server.forms.at(-1)!;
    expect(form.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(form.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(form.get('client_id')).toBe('web-app');
  });
});
