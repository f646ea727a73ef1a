import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { CLIENT_ID, DECISION_PATH, REDIRECT_URI, decide, openSignInPage } from './user-test-kit.js';

const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

let platform: PlatformEmulator;
beforeEach(async () => {
  platform = await PlatformEmulator.start();
  platform.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI], name: 'Web <App>' });
});
afterEach(() => platform.close());

function authorizeUrl(overrides: Record<string, string | undefined> = {}): string {
  const url = new URL(platform.authorizeUrl);
  const parameters: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    state: 'state-123',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...overrides,
  };
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}

function tokenRequest(fields: Record<string, string>): Promise<Response> {
  return fetch(platform.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

async function codeFor(url = authorizeUrl()): Promise<string> {
  const { requestId } = await openSignInPage(url);
  return new URL(await decide(platform, requestId, 'approve')).searchParams.get('code')!;
}

describe('GET /loginservice/connect/authorize', () => {
  it.each([
    ['an unknown client', { client_id: 'someone-else' }, /not a registered user client/],
    ['a missing client_id', { client_id: undefined }, /client_id is missing/],
    ['a redirect URI not registered', { redirect_uri: 'https://attacker.example/cb' }, /not registered/],
    ['a redirect URI that only starts like the registered one', { redirect_uri: REDIRECT_URI + '/x' }, /exact match/],
    ['no code_challenge', { code_challenge: undefined }, /PKCE is required/],
    ['the plain method', { code_challenge_method: 'plain' }, /must be S256/],
    ['no method (plain by default)', { code_challenge_method: undefined }, /must be S256/],
    ['a challenge that is not S256-shaped', { code_challenge: 'short' }, /43 base64url/],
  ])('answers %s with an error page, never a redirect', async (_name, overrides, message) => {
    const response = await fetch(authorizeUrl(overrides), { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toMatch(message);
    expect(platform.userJournal.at(-1)).toMatchObject({ step: 'authorize', verdict: 'rejected', status: 400 });
  });

  it('sends other errors back to the registered URI with state and iss', async () => {
    const response = await fetch(authorizeUrl({ response_type: 'token' }), { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: 'unsupported_response_type',
      error_description: 'response_type must be code',
      state: 'state-123',
      iss: platform.url,
    });
  });

  it('serves a self-contained sign-in page under a strict CSP, with the client name escaped', async () => {
    const response = await fetch(authorizeUrl({ scope: 'profile' }));
    const html = await response.text();
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain(`form-action 'self' ${new URL(REDIRECT_URI).origin}`);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(html).not.toMatch(/<script|src=|href=/);
    expect(html).toContain('Web &lt;App&gt;');
    expect(html).toContain('Alice Example');
    expect(html).toContain(`action="${DECISION_PATH}"`);
  });

  it('accepts one decision per page', async () => {
    const { requestId } = await openSignInPage(authorizeUrl());
    await decide(platform, requestId, 'approve');
    const again = await fetch(platform.url + DECISION_PATH, {
      method: 'POST',
      body: new URLSearchParams({ request: requestId, user: 'user-alice', decision: 'approve' }),
      redirect: 'manual',
    });
    expect(again.status).toBe(400);
    expect(again.headers.get('location')).toBeNull();
  });
});

describe('the token endpoint, authorization_code grant', () => {
  const exchange = (code: string, overrides: Record<string, string> = {}) =>
    tokenRequest({
      grant_type: 'authorization_code',
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      code,
      code_verifier: VERIFIER,
      ...overrides,
    });

  it('issues tokens for the right verifier, once', async () => {
    const code = await codeFor();
    const first = await exchange(code);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(await first.json()).toMatchObject({ token_type: 'Bearer', expires_in: 600 });
    const replay = await exchange(code);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it.each([
    ['a wrong code_verifier', { code_verifier: VERIFIER.replace('d', 'e') }, 'invalid_grant', 'code_verifier'],
    ['no code_verifier', { code_verifier: '' }, 'invalid_request', 'code_verifier'],
    ['another redirect_uri', { redirect_uri: 'http://127.0.0.1:9/other' }, 'invalid_grant', 'redirect_uri'],
    ['an unknown client', { client_id: 'nobody' }, 'invalid_client', 'client_id'],
    ['an unknown code', { code: 'made-up' }, 'invalid_grant', 'code'],
  ])('refuses %s', async (_name, overrides, error, rule) => {
    const code = await codeFor();
    const response = await exchange(code, overrides);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error });
    expect(platform.journal.at(-1)).toMatchObject({ grantType: 'authorization_code', verdict: 'rejected', rule });
  });

  it('refuses a code issued to another client', async () => {
    platform.registerUserClient({ clientId: 'other-app', redirectUris: [REDIRECT_URI] });
    const code = await codeFor();
    const response = await exchange(code, { client_id: 'other-app' });
    expect(await response.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('still answers the machine grant and refuses unknown grants', async () => {
    const response = await tokenRequest({ grant_type: 'password', client_id: CLIENT_ID });
    expect(await response.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });
});

describe('registering user clients', () => {
  it('refuses duplicates, fragments and empty redirect lists', () => {
    expect(() => platform.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] })).toThrow(
      /already registered/,
    );
    expect(() => platform.registerUserClient({ clientId: 'x', redirectUris: ['https://a.example/cb#f'] })).toThrow(
      /fragment/,
    );
    expect(() => platform.registerUserClient({ clientId: 'y', redirectUris: [] })).toThrow(/at least one/);
  });
});

describe('pending sign-in requests are bounded', () => {
  it('past maxPendingSignIns the oldest open page is forgotten; the newer ones still work', async () => {
    const bounded = await PlatformEmulator.start({ maxPendingSignIns: 3 });
    try {
      bounded.registerUserClient({ clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] });
      const url = new URL(authorizeUrl());
      url.host = new URL(bounded.url).host;
      const pages: string[] = [];
      for (let i = 0; i < 5; i += 1) pages.push((await openSignInPage(url.href)).requestId);
      for (const requestId of pages.slice(0, 2)) {
        const refused = await fetch(bounded.url + DECISION_PATH, {
          method: 'POST',
          body: new URLSearchParams({ request: requestId, user: 'user-alice', decision: 'approve' }),
          redirect: 'manual',
        });
        expect(refused.status).toBe(400);
        expect(await refused.text()).toMatch(/unknown, already answered or expired/);
      }
      for (const requestId of pages.slice(2)) expect(await decide(bounded, requestId, 'approve')).toMatch(/[?&]code=/);
    } finally {
      await bounded.close();
    }
  });

  it('refuses a maxPendingSignIns that is not a whole number >= 1', async () => {
    await expect(PlatformEmulator.start({ maxPendingSignIns: 0 })).rejects.toThrow(
      /maxPendingSignIns must be a whole number >= 1/,
    );
  });
});

describe('the revocation endpoint (RFC 7009)', () => {
  it('revoking a refresh token ends its sign-in; unknown tokens answer 200; unknown clients are refused', async () => {
    const code = await codeFor();
    const tokens = (await (
      await tokenRequest({
        grant_type: 'authorization_code',
        client_id: CLIENT_ID,
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: VERIFIER,
      })
    ).json()) as { refresh_token: string };
    const revoke = (fields: Record<string, string>) =>
      fetch(platform.url + '/loginservice/connect/revocation', { method: 'POST', body: new URLSearchParams(fields) });
    expect((await revoke({ client_id: 'someone-else', token: tokens.refresh_token })).status).toBe(400);
    expect((await revoke({ client_id: CLIENT_ID, token: 'unknown' })).status).toBe(200);
    expect(
      (await revoke({ client_id: CLIENT_ID, token: tokens.refresh_token, token_type_hint: 'refresh_token' })).status,
    ).toBe(200);
    const refreshed = await tokenRequest({
      grant_type: 'refresh_token',
      client_id: CLIENT_ID,
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' });
  });
});
