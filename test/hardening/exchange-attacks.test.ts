import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { firstValueFrom } from 'rxjs';
import { type TokenExchangeError } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { sanitizeRemoteText } from '../../lib/util/remote-text.util.js';
import { parseRetryAfter } from '../../lib/token/retry-after.util.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { startLoopbackServer, type LoopbackServer } from '../support/loopback-server.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import {
  json,
  startScriptedTokenServer,
  tokenReply,
  type ScriptedTokenServer,
} from '../support/scripted-token-server.js';
import {
  createProvider,
  exchangeFailure as expectExchangeFailure,
  type ProviderHarness,
} from '../support/token-provider-harness.js';

// Attacks on the token exchange: each describe names the defence it checks (SECURITY.md lists them).

const start = usePlatformFixtures();
let credentials: TestCredentials;
let server: ScriptedTokenServer | undefined;
let harness: ProviderHarness | undefined;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  credentials = await createTestCredentials();
});
afterEach(async () => {
  harness?.destroy();
  harness = undefined;
  await server?.close();
  server = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(overrides: Parameters<typeof createProvider>[2] = {}): Promise<ProviderHarness> {
  server = await startScriptedTokenServer();
  harness = await createProvider(credentials, server.url, overrides);
  return harness;
}

function exchangeFailure(h: ProviderHarness): Promise<TokenExchangeError> {
  return expectExchangeFailure(h.tokens, [...server!.assertions, ...server!.issued]);
}

/** CPU time (user + system) spent in `action`, in ms. */
async function cpuMs(action: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  await action();
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / 1000;
}

describe('remote text is bounded before it is scrubbed, and scrubbed in linear time', () => {
  it('a 1 MB field takes well under 100 ms of CPU and still loses JWT-shaped text', async () => {
    const jwtShaped = `${'a'.repeat(20)}.${'b'.repeat(20)}.${'c'.repeat(20)}`;
    const fields = [
      'a'.repeat(1_000_000),
      `${jwtShaped} ${'x'.repeat(1_000_000)}`,
      'abcdefgh.'.repeat(111_112),
      'a-'.repeat(500_000),
    ];
    for (const field of fields) {
      let clean: string | undefined;
      expect(await cpuMs(() => (clean = sanitizeRemoteText(field)))).toBeLessThan(100);
      expect(clean!.length).toBeLessThanOrEqual(301);
      expect(clean).not.toContain(jwtShaped);
    }
  });

  it('a 65,000-character error_description and token_type from the endpoint cost little CPU', async () => {
    const h = await setUp();
    const long = 'a'.repeat(65_000);
    server!.replies.push((res) => json(res, 400, { error: 'invalid_request', error_description: long }));
    server!.replies.push(tokenReply(server!, { token_type: long }));
    const spent = await cpuMs(async () => {
      const refused = await exchangeFailure(h);
      expect(refused.oauthErrorDescription!.length).toBeLessThanOrEqual(301);
      h.clock.advance(10_000);
      const invalid = await exchangeFailure(h);
      expect(invalid).toMatchObject({ reason: 'invalid_response' });
    });
    expect(spent).toBeLessThan(500);
  });
});

describe('Retry-After accepts only the RFC 9110 forms', () => {
  const now = Date.UTC(2026, 10, 23, 12, 0, 0);

  it.each(['-5', '1.5', '+3', '0x10', '1e3', 'soon', 'Mon, 32 Nov 2026 12:00:00 GMT', '2026-11-23T12:00:10Z'])(
    '%j is not a Retry-After value',
    (value) => {
      expect(parseRetryAfter(value, now)).toBeUndefined();
    },
  );

  it('delay-seconds, IMF-fixdate, RFC 850 and asctime dates are read', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Mon, 23 Nov 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Monday, 23-Nov-26 12:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Mon Nov 23 12:00:10 2026', now)).toBe(10_000);
    expect(parseRetryAfter('Mon Nov  2 12:00:10 2026', now)).toBe(0);
  });

  it.each(['-5', '1.5'])('a 503 with Retry-After %j falls back to the normal back-off', async (value) => {
    const h = await setUp();
    server!.replies.push((res) => json(res, 503, {}, { 'Retry-After': value }));
    await h.tokens.getAccessToken();
    expect(h.clock.sleeps).toHaveLength(1);
    expect(h.clock.sleeps[0]).toBeGreaterThanOrEqual(50); // baseDelayMs 100, equal jitter
  });
});

describe('OAuth error values are looked up as own entries only', () => {
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'error %j gets the generic hint, not an Object.prototype member',
    async (oauthError) => {
      const h = await setUp();
      server!.fallback = (res) => json(res, 400, { error: oauthError });
      const error = await exchangeFailure(h);
      expect(error.oauthError).toBe(oauthError);
      expect(error.hint).not.toMatch(/native code|\[object Object\]|function/);
      expect(error.hint).toMatch(/HTTP 400/);
    },
  );
});

describe('decision: an access_token must be an RFC 6750 b64token', () => {
  it.each(['abc\r\nX-Injected: 1', 'two words', 'tab\there', 'ümlaut', 'a"b'])(
    '%j is refused as an invalid token response',
    async (accessToken) => {
      const h = await setUp();
      server!.fallback = (res) => json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 600 });
      const error = await exchangeFailure(h);
      expect(error).toMatchObject({ reason: 'invalid_response' });
      expect(error.summary).toMatch(/b64token/);
      expectNoSecrets(error, [accessToken]);
    },
  );

  it('every b64token character is accepted', async () => {
    const h = await setUp();
    const accessToken = 'AZaz09-._~+/abc==';
    server!.fallback = (res) => json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 600 });
    expect(await h.tokens.getAccessToken()).toBe(accessToken);
  });
});

describe('decision: a loopback http exchange and API call never go through HTTP_PROXY', () => {
  async function proxyInEnvironment(): Promise<LoopbackServer> {
    const proxy = await startLoopbackServer();
    const saved = Object.fromEntries(
      ['HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'].map((name) => [name, process.env[name]]),
    );
    process.env.HTTP_PROXY = proxy.url;
    process.env.http_proxy = proxy.url;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    cleanups.push(() => proxy.close());
    cleanups.push(() => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    return proxy;
  }

  it('the token exchange', async () => {
    const proxy = await proxyInEnvironment();
    const h = await setUp();
    expect(await h.tokens.getAccessToken()).toBe(server!.issued[0]);
    expect(proxy.requests).toEqual([]);
  });

  it('requests to an allowed http: origin; other origins still honour the proxy', async () => {
    const f = await start();
    const proxy = await proxyInEnvironment();
    expect((await firstValueFrom(f.http.get('/api/billing'))).status).toBe(200);
    expect(proxy.requests).toEqual([]);
    await firstValueFrom(f.http.get('http://127.0.0.2:9/elsewhere'));
    expect(proxy.requests).toEqual([expect.objectContaining({ url: 'http://127.0.0.2:9/elsewhere' })]);
    expect(proxy.requests[0].authorization).toBeUndefined();
  });
});
