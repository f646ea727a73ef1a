import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type RegisteredIntegration,
} from 'nestjs-platform-auth/testing';
import { AssertionFactory, callApi, obtainAccessToken } from './emulator-test-kit.js';

const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let integration: RegisteredIntegration;
let assertions: AssertionFactory;

beforeAll(async () => {
  const credentials = await createTestCredentials();
  platform = await PlatformEmulator.start({ now: () => clock.now(), tokenLifetimeSeconds: 120 });
  integration = platform.registerIntegration({ certificatePem: credentials.certificatePem });
  assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
});

afterAll(() => platform.close());

beforeEach(() => {
  platform.setPermissions(integration.machineId, ['Send message', 'Retrieve billing data']);
  platform.setClockOffset(0);
});

const freshToken = (): Promise<string> => obtainAccessToken(platform, assertions, clock.now());

async function expectUnauthorized(response: Response, description: RegExp): Promise<void> {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  expect(await response.json()).toEqual({
    error: 'invalid_token',
    error_description: expect.stringMatching(description),
  });
}

describe('placeholder routes with a valid token', () => {
  it('POST /api/messages accepts the message and echoes it', async () => {
    const response = await callApi(platform, 'messages', {
      token: await freshToken(),
      body: { to: 'someone', text: 'hi' },
    });

    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      accepted: true,
      messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      machineId: integration.machineId,
      message: { to: 'someone', text: 'hi' },
      placeholder: true,
    });
  });

  it('GET /api/billing returns placeholder billing data', async () => {
    const response = await callApi(platform, 'billing', { token: await freshToken() });

    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ machineId: integration.machineId, placeholder: true });
  });

  it('accepts the Bearer scheme in any case (RFC 6750)', async () => {
    const response = await callApi(platform, 'billing', { authorization: `bearer ${await freshToken()}` });
    expect(response.status).toBe(200);
  });

  it('refuses a message body that is not JSON', async () => {
    const response = await fetch(`${platform.url}/api/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await freshToken()}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(response.status).toBe(400);
  });
});

describe('placeholder routes refuse', () => {
  it('a request without Authorization', async () => {
    await expectUnauthorized(await callApi(platform, 'billing'), /Authorization header is missing/);
  });

  it.each([['Basic dXNlcjpwYXNz'], ['Bearer'], ['Bearer two tokens'], ['Token abc']])(
    'a malformed Authorization %j',
    async (authorization) => {
      await expectUnauthorized(
        await callApi(platform, 'billing', { authorization }),
        /not of the form Bearer <access token>/,
      );
    },
  );

  it('a token this platform never issued', async () => {
    await expectUnauthorized(
      await callApi(platform, 'messages', { token: 'A'.repeat(43) }),
      /not issued by this platform/,
    );
  });

  it('an expired token, by emulator time (FakeClock)', async () => {
    const token = await freshToken();
    clock.advance(119_000);
    expect((await callApi(platform, 'billing', { token })).status).toBe(200);
    clock.advance(1_000);
    await expectUnauthorized(await callApi(platform, 'billing', { token }), /the access token expired at/);
  });

  it('an expired token, by clock offset', async () => {
    const token = await freshToken();
    platform.setClockOffset(120_000);
    await expectUnauthorized(await callApi(platform, 'billing', { token }), /expired/);
  });

  it('a revoked token, and only that one', async () => {
    const [revoked, kept] = await Promise.all([freshToken(), freshToken()]);

    expect(platform.revokeToken(revoked)).toBe(true);
    expect(platform.revokeToken(revoked)).toBe(false);
    expect(platform.revokeToken('never-issued')).toBe(false);

    await expectUnauthorized(await callApi(platform, 'messages', { token: revoked }), /revoked/);
    expect((await callApi(platform, 'messages', { token: kept })).status).toBe(202);
  });

  it('every token after revokeAllTokens, which counts the usable ones', async () => {
    const expiredToken = await freshToken();
    clock.advance(120_000);
    const tokens = await Promise.all([freshToken(), freshToken(), freshToken()]);

    expect(platform.revokeAllTokens()).toBe(3);
    for (const token of [...tokens, expiredToken])
      expect((await callApi(platform, 'billing', { token })).status).toBe(401);
    expect((await callApi(platform, 'billing', { token: await freshToken() })).status).toBe(200);
  });

  it('a call without the route permission, with 403 insufficient_scope', async () => {
    platform.setPermissions(integration.machineId, ['Send message']);
    const token = await freshToken();

    const billing = await callApi(platform, 'billing', { token });
    expect(billing.status).toBe(403);
    expect(billing.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
    expect(await billing.json()).toEqual({
      error: 'insufficient_scope',
      error_description: expect.stringMatching(/lacks the permission "Retrieve billing data"/),
    });
    expect((await callApi(platform, 'messages', { token })).status).toBe(202);

    platform.setPermissions(integration.machineId, ['Retrieve billing data']);
    expect((await callApi(platform, 'messages', { token })).status).toBe(403);
    expect((await callApi(platform, 'billing', { token })).status).toBe(200);
  });

  it('permission changes through the live integration object too', async () => {
    const token = await freshToken();
    integration.permissions = [];
    expect((await callApi(platform, 'messages', { token })).status).toBe(403);
  });

  it('an unknown path with 404 and a wrong method with 405', async () => {
    const unknown = await fetch(`${platform.url}/api/nothing-here`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });

    const wrongMethod = await fetch(`${platform.url}/api/billing`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET');
  });
});
