import { calculatePKCECodeChallenge } from 'oauth4webapi';
import { Test } from '@nestjs/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
import { matchesS256 } from '../../lib/testing/user-flow/user-flow.grants.js';
import { CLIENT_ID, REDIRECT_URI, signIn, startUserFixture, type UserFixture } from './user-test-kit.js';

describe('PKCE S256', () => {
  // RFC 7636 Appendix B.
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  it('the library side (oauth4webapi) derives the RFC 7636 Appendix B challenge', async () => {
    await expect(calculatePKCECodeChallenge(verifier)).resolves.toBe(challenge);
  });

  it('the emulator side verifies the Appendix B pair and refuses a verifier one character off', () => {
    expect(matchesS256(verifier, challenge)).toBe(true);
    expect(matchesS256(verifier.slice(0, -1) + 'j', challenge)).toBe(false);
  });
});

describe('the whole sign-in over HTTP, redirects followed by hand', () => {
  let fx: UserFixture;
  beforeEach(async () => {
    fx = await startUserFixture();
  });
  afterEach(() => fx.close());

  it('builds a standard authorize URL: code, client, redirect, scope, state and an S256 challenge', async () => {
    const { url, transaction, expiresAt } = await fx.auth.createAuthorizationRequest();
    const parsed = new URL(url);
    expect(parsed.origin + parsed.pathname).toBe(fx.platform.authorizeUrl);
    const query = Object.fromEntries(parsed.searchParams);
    expect(query).toMatchObject({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      scope: 'profile',
      code_challenge_method: 'S256',
    });
    expect(query.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(query.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(query.nonce).toBeUndefined();
    // Opaque: five base64url parts of a JWE, none of which shows the state.
    expect(transaction.split('.')).toHaveLength(5);
    expect(transaction).not.toContain(query.state);
    expect(expiresAt.getTime() - fx.clock.now()).toBe(600_000);
  });

  it('signs in, calls /api/me as the user, refreshes, and journals every step', async () => {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url, 'approve', 'user-bob');
    const callbackUrl = new URL(callback);
    expect(callbackUrl.origin + callbackUrl.pathname).toBe(REDIRECT_URI);
    expect(callbackUrl.searchParams.get('iss')).toBe(fx.platform.url);

    // As a controller sees it: only the path and query of the request.
    const tokens = await fx.auth.completeAuthorization(callbackUrl.pathname + callbackUrl.search, transaction);
    expect(tokens).toMatchObject({ tokenType: 'Bearer', scope: 'profile' });
    expect(tokens.expiresAt.getTime()).toBe(fx.clock.now() + 600_000);
    expect(tokens.refreshToken).toBeTypeOf('string');

    const me = await fetch(`${fx.platform.url}/api/me`, { headers: { authorization: `Bearer ${tokens.accessToken}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: 'user-bob', name: 'Bob Example', clientId: CLIENT_ID });

    const renewed = await fx.auth.refresh(tokens.refreshToken!);
    expect(renewed.accessToken).not.toBe(tokens.accessToken);
    expect(renewed.refreshToken).not.toBe(tokens.refreshToken);
    const meAgain = await fetch(`${fx.platform.url}/api/me`, {
      headers: { authorization: `Bearer ${renewed.accessToken}` },
    });
    expect(meAgain.status).toBe(200);

    expect(fx.platform.userJournal.map((r) => `${r.step}:${r.verdict}:${r.status}`)).toEqual([
      'authorize:accepted:200',
      'sign-in:accepted:303',
      'token:accepted:200',
      'me:accepted:200',
      'token:accepted:200',
      'me:accepted:200',
    ]);
    expect(fx.platform.journal.map((r) => r.grantType)).toEqual(['authorization_code', 'refresh_token']);
    const journalText = JSON.stringify([fx.platform.userJournal, fx.platform.journal]);
    for (const secret of [tokens.accessToken, tokens.refreshToken!, callbackUrl.searchParams.get('code')!])
      expect(journalText).not.toContain(secret);
  });

  it('finishes on another replica: the transaction carries everything the callback needs', async () => {
    const other = await startUserFixture();
    try {
      // A second module instance, same configuration and secret, pointed at the first emulator.
      const { url, transaction } = await other.auth.createAuthorizationRequest();
      const rewritten = url.replace(other.platform.url, fx.platform.url);
      const callback = await signIn(fx.platform, rewritten);
      await expect(fx.auth.completeAuthorization(callback, transaction)).resolves.toMatchObject({
        tokenType: 'Bearer',
      });
    } finally {
      await other.close();
    }
  });

  it('answers /api/me with 403 for a machine token, and 401 without one or with an unknown one', async () => {
    const integration = await fx.platform.createIntegration();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...integration.moduleOptions, clock: fx.clock })],
    }).compile();
    try {
      const machineToken = await moduleRef.get(TokenProvider).getAccessToken();
      const me = (authorization?: string) =>
        fetch(`${fx.platform.url}/api/me`, { headers: authorization ? { authorization } : {} });
      const forbidden = await me(`Bearer ${machineToken}`);
      expect(forbidden.status).toBe(403);
      expect(await forbidden.json()).toMatchObject({ error: 'insufficient_scope' });
      expect((await me()).status).toBe(401);
      expect((await me('Bearer not-a-token')).status).toBe(401);
      // The machine API is unchanged by the user grants beside it.
      const billing = await fetch(`${fx.platform.url}/api/billing`, {
        headers: { authorization: `Bearer ${machineToken}` },
      });
      expect(billing.status).toBe(200);
    } finally {
      await moduleRef.close();
    }
  });
});
