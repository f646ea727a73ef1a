import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, type TokenExchangeError } from 'nestjs-platform-auth';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { startLoopbackServer } from '../support/loopback-server.js';
import {
  json,
  raw,
  startScriptedTokenServer,
  tokenReply,
  type ScriptedTokenServer,
} from '../support/scripted-token-server.js';
import {
  createProvider,
  exchangeFailure as expectExchangeFailure,
  type ProviderHarness,
} from '../support/token-provider-harness.js';

let credentials: TestCredentials;
let server: ScriptedTokenServer;
let harness: ProviderHarness | undefined;

beforeAll(async () => {
  credentials = await createTestCredentials();
});
afterAll(() => undefined);
afterEach(async () => {
  harness?.destroy();
  harness = undefined;
  await server?.close();
});

async function setUp(overrides: Parameters<typeof createProvider>[2] = {}): Promise<ProviderHarness> {
  server = await startScriptedTokenServer();
  // A busy machine can take more than the harness's 500 ms to read a 10 MB answer; only the timeout tests set one.
  harness = await createProvider(credentials, server.url, {
    ...overrides,
    exchange: { timeoutMs: 60_000, ...overrides.exchange },
  });
  return harness;
}

/** The exchange's failure, checked to be a TokenExchangeError that leaks nothing. */
function exchangeFailure(h: ProviderHarness): Promise<TokenExchangeError> {
  return expectExchangeFailure(h.tokens, [...server.assertions, ...server.issued, credentials.privateKeyPem]);
}

describe('transient failures are retried, bounded', () => {
  it.each([500, 502, 503])('HTTP %i: retried up to maxAttempts, then a typed error', async (status) => {
    const h = await setUp();
    server.fallback = (res) => json(res, status, { error: 'server_error' });
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'http_error', status, attempts: 3, retried: true });
    expect(server.requests).toBe(3);
    expect(new Set(server.assertions).size).toBe(3); // a fresh assertion per attempt
    expect(h.clock.sleeps).toHaveLength(2);
  });

  it('recovers when a 5xx is followed by a token', async () => {
    const h = await setUp();
    server.replies.push((res) => json(res, 503, {}));
    expect(await h.tokens.getAccessToken()).toBe(server.issued[0]);
    expect(server.requests).toBe(2);
  });

  it('429 with Retry-After in seconds waits that long', async () => {
    const h = await setUp();
    server.replies.push((res) => json(res, 429, {}, { 'Retry-After': '1' }));
    await h.tokens.getAccessToken();
    expect(h.clock.sleeps).toEqual([1_000]);
  });

  it('429 with Retry-After as an HTTP date waits until then', async () => {
    const h = await setUp();
    const inOneSecond = new Date(h.clock.now() + 1_500).toUTCString();
    server.replies.push((res) => json(res, 429, {}, { 'Retry-After': inOneSecond }));
    await h.tokens.getAccessToken();
    expect(h.clock.sleeps).toHaveLength(1);
    expect(h.clock.sleeps[0]).toBeGreaterThan(0);
    expect(h.clock.sleeps[0]).toBeLessThanOrEqual(1_500);
  });

  it('a Retry-After beyond maxDelayMs ends the exchange, and callers wait it out (at most 5 min)', async () => {
    const h = await setUp();
    server.replies.push((res) => json(res, 429, {}, { 'Retry-After': '3600' }));
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'http_error', status: 429, attempts: 1 });
    expect(error.hint).toMatch(/asked to retry after 3600 s/);
    h.clock.advance(4 * 60_000);
    await expect(h.tokens.getAccessToken()).rejects.toMatchObject({ reason: 'backoff' });
    expect(server.requests).toBe(1);
    h.clock.advance(60_001);
    expect(await h.tokens.getAccessToken()).toBe(server.issued.at(-1));
    expect(server.requests).toBe(2);
  });

  it('429 with an invalid Retry-After falls back to exponential back-off', async () => {
    const h = await setUp();
    server.replies.push((res) => json(res, 429, {}, { 'Retry-After': 'soon, maybe' }));
    await h.tokens.getAccessToken();
    expect(h.clock.sleeps).toHaveLength(1);
    expect(h.clock.sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(h.clock.sleeps[0]).toBeLessThanOrEqual(100);
  });

  it('a hung server times out per attempt; the whole exchange stays bounded', async () => {
    const h = await setUp({ exchange: { timeoutMs: 200, retry: { maxAttempts: 2, baseDelayMs: 10 } } });
    const unanswered: boolean[] = [];
    // Never answers; records, when the connection ends, that it ended with no answer.
    server.fallback = (res) => void res.on('close', () => unanswered.push(!res.writableEnded));
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'timeout', attempts: 2 });
    // Each attempt ended on its own 200 ms timeout, not the 10 s default: the client hung up on both requests.
    expect(error.message).toContain('did not answer within 200 ms');
    await eventually(() => expect(unanswered).toEqual([true, true]));
    expect(server.requests).toBe(2);
  });

  it('a body that drips in slowly is cut off by the attempt timeout', async () => {
    const h = await setUp({ exchange: { timeoutMs: 300, retry: { maxAttempts: 1 } } });
    server.fallback = (res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 50);
      res.on('close', () => {
        clearInterval(drip);
        cutOff = !res.writableEnded;
      });
    };
    let cutOff = false;
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'timeout', attempts: 1 });
    // The attempt's 300 ms bound applies to the body too: the client hung up while the body was still dripping.
    expect(error.message).toContain('did not answer within 300 ms');
    await eventually(() => expect(cutOff).toBe(true));
  });

  it('a connection cut part-way through the body is a network error, retried', async () => {
    const h = await setUp();
    server.replies.push((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '500' });
      res.write('{"access_token":"abc');
      setImmediate(() => res.socket?.destroy());
    });
    expect(await h.tokens.getAccessToken()).toBe(server.issued.at(-1));
    expect(server.requests).toBe(2);
  });

  it('a connection reset is a network error, retried', async () => {
    const h = await setUp();
    server.fallback = (res) => res.socket?.destroy();
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'network_error', attempts: 3 });
    expect(error.networkCode).toMatch(/^E[A-Z]+/);
  });
});

describe('a 200 that is not a token response is refused, not retried, not cached', () => {
  const cases: Array<
    [string, (s: ScriptedTokenServer) => Parameters<ScriptedTokenServer['replies']['push']>[0], RegExp]
  > = [
    [
      'HTML',
      () => raw(200, '<html><body>Login</body></html>', { 'Content-Type': 'text/html' }),
      /not JSON \(text\/html\)/,
    ],
    ['text', () => raw(200, 'ok', { 'Content-Type': 'text/plain' }), /not JSON \(text\/plain\)/],
    ['null', () => raw(200, 'null', { 'Content-Type': 'application/json' }), /body is null/],
    ['[]', () => raw(200, '[]', { 'Content-Type': 'application/json' }), /body is an array/],
    [
      'a 10 MB body',
      () => raw(200, `{"access_token":"${'x'.repeat(10 * 1024 * 1024)}"}`, { 'Content-Type': 'application/json' }),
      /exceeds the 65536-byte limit/,
    ],
    ['no access_token', (s) => tokenReply(s, { access_token: undefined }), /access_token is missing or empty/],
    ['an empty access_token', (s) => tokenReply(s, { access_token: '' }), /access_token is missing or empty/],
    ['no token_type', (s) => tokenReply(s, { token_type: undefined }), /token_type is missing, expected Bearer/],
    ['token_type MAC', (s) => tokenReply(s, { token_type: 'MAC' }), /token_type is 'MAC', expected Bearer/],
    ['expires_in -1', (s) => tokenReply(s, { expires_in: -1 }), /expires_in must be a positive number/],
    ['expires_in 0', (s) => tokenReply(s, { expires_in: 0 }), /expires_in must be a positive number/],
    ['expires_in "NaN"', (s) => tokenReply(s, { expires_in: 'NaN' }), /expires_in must be a positive number/],
    ['expires_in true', (s) => tokenReply(s, { expires_in: true }), /expires_in must be a positive number/],
    [
      'expires_in 0.001',
      (s) => tokenReply(s, { expires_in: 0.001 }),
      /expires_in must be a positive number .*at least 1/,
    ],
  ];
  /** Answers the client could not read as JSON: a wrong URL is the likely cause, so the hint names baseUrl. */
  const notJson = new Set(['HTML', 'text', 'a 10 MB body']);

  it.each(cases)('%s', async (name, reply, message) => {
    const h = await setUp();
    server.replies.push(reply(server));
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'invalid_response', attempts: 1, retried: false });
    expect(error.message).toMatch(message);
    // The endpoint that answered JSON is the token endpoint answering badly: no point sending users to baseUrl.
    if (notJson.has(name)) expect(error.hint).toMatch(/baseUrl/);
    else expect(error.hint).toMatch(/^The token endpoint answered JSON that is not a valid token response/);
    if (!notJson.has(name)) expect(error.hint).not.toMatch(/baseUrl/);
    h.clock.advance(1_001); // past the failure back-off: the next caller exchanges again
    expect(await h.tokens.getAccessToken()).toBe(server.issued.at(-1));
    expect(server.requests).toBe(2);
  });
});

describe('expires_in forms that are accepted', () => {
  it.each([
    ['"3600"', '3600', 3_600_000, []],
    ['1 (any positive lifetime is authoritative)', 1, 1_000, []],
    ['5', 5, 5_000, []],
    ['9', 9, 9_000, []],
    ['1e12 (capped at 24 h)', 1e12, 24 * 3_600_000, ['expires_in 1000000000000 s is implausible; capped at 86400 s']],
    ['absent (600 s assumed)', undefined, 600_000, ['token response has no expires_in; assuming 600 s']],
  ])('%s', async (_name, value, lifetimeMs, warnings) => {
    const h = await setUp();
    server.replies.push(tokenReply(server, { expires_in: value }));
    const token = await h.tokens.getToken();
    expect(token.expiresAt.getTime()).toBe(h.clock.now() + lifetimeMs);
    expect(h.logger.messages('warn')).toEqual(warnings);
  });

  it('token_type in any case', async () => {
    const h = await setUp();
    server.replies.push(tokenReply(server, { token_type: 'bEaReR' }));
    expect((await h.tokens.getToken()).tokenType).toBe('Bearer');
  });
});

describe('redirects and refusals', () => {
  it('a 302 to another host is not followed and the assertion is not re-posted', async () => {
    const elsewhere = await startLoopbackServer();
    try {
      const h = await setUp();
      server.replies.push((res) =>
        res.writeHead(302, { Location: `${elsewhere.url}/loginservice/connect/token` }).end(),
      );
      const error = await exchangeFailure(h);
      expect(error).toMatchObject({ reason: 'redirect', status: 302, attempts: 1 });
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it.each([
    ['invalid_request', /malformed/],
    ['invalid_client', /certificate is registered/],
    ['invalid_grant', /refused the assertion/],
    ['unauthorized_client', /Active/],
    ['unsupported_grant_type', /token endpoint URL/],
    ['invalid_scope', /scope/],
  ])('RFC 6749 error %s fails fast with a hint', async (code, hint) => {
    const h = await setUp();
    server.fallback = (res) => json(res, code === 'invalid_client' ? 401 : 400, { error: code });
    const error = await exchangeFailure(h);
    expect(error).toMatchObject({ reason: 'http_error', oauthError: code, attempts: 1, retried: false });
    expect(error.hint).toMatch(hint);
    expect(server.requests).toBe(1);
  });

  it('an error_description that echoes the assertion is sanitised', async () => {
    const h = await setUp();
    server.fallback = (res, req) => {
      void req;
      json(res, 400, {
        error: 'invalid_grant',
        error_description: `bad token ${server.assertions.at(-1)} \u0000\u001b[31m`,
      });
    };
    const error = await exchangeFailure(h);
    expect(error.oauthErrorDescription).toBe('bad token [REDACTED] \\x00\\x1b[31m');
  });

  it('with tokenEncoding base64, an echoed (encoded) assertion is sanitised too', async () => {
    const h = await setUp({ exchange: { encoding: 'base64' } });
    server.fallback = (res) =>
      json(res, 400, { error: 'invalid_request', error_description: `cannot read ${server.assertions.at(-1)}` });
    const error = await exchangeFailure(h);
    expect(error.oauthErrorDescription).toBe('cannot read [REDACTED]');
  });

  it('an http:// base URL off loopback is refused at start-up', async () => {
    await expect(
      loadPlatformAuthConfig(
        {
          baseUrl: 'http://platform.example.com',
          machineId: 'm',
          key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
        },
        Date.now(),
      ),
    ).rejects.toThrow(PlatformAuthConfigError);
  });
});
