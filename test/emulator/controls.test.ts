import { request as httpRequest } from 'node:http';
import { CLAIM_RULE_ORDER } from '../../lib/testing/emulator/emulator.claim-rules.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type RegisteredIntegration,
  type TestCredentials,
} from 'nestjs-platform-auth/testing';
import { AssertionFactory, callApi, obtainAccessToken, requestToken } from './emulator-test-kit.js';
import { eventually } from '../support/eventually.js';

const clock = new FakeClock(Date.now());
let credentials: TestCredentials;
let platform: PlatformEmulator;
let integration: RegisteredIntegration;
let assertions: AssertionFactory;

beforeAll(async () => {
  credentials = await createTestCredentials();
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  integration = platform.registerIntegration({ certificatePem: credentials.certificatePem });
  assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
});

afterAll(() => platform.close());

beforeEach(() => {
  platform.setClockOffset(0);
  platform.resetCounters();
});

const validAssertion = (): Promise<string> => assertions.sign({ nowMs: clock.now() });
const timerOf = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('start', () => {
  it('listens on 127.0.0.1 on a random port; audience is the host of its URL', () => {
    expect(platform.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(platform.tokenUrl).toBe(`${platform.url}/loginservice/connect/token`);
    expect(platform.audience).toBe(new URL(platform.url).host);
  });

  it('refuses options that cannot work', async () => {
    await expect(PlatformEmulator.start({ invalidClientStatus: 500 })).rejects.toThrow(/invalidClientStatus/);
    await expect(PlatformEmulator.start({ tokenEncodings: [] })).rejects.toThrow(/tokenEncodings/);
    await expect(PlatformEmulator.start({ tokenLifetimeSeconds: 0 })).rejects.toThrow(/tokenLifetimeSeconds/);
  });

  it('fails to start on a port already in use', async () => {
    const port = Number(new URL(platform.url).port);
    await expect(PlatformEmulator.start({ port })).rejects.toThrow(/EADDRINUSE/);
  });
});

describe('registry', () => {
  it('refuses a second integration with the same certificate', () => {
    expect(() => platform.registerIntegration({ certificatePem: credentials.certificatePem })).toThrow(
      /thumbprint .* already registered/,
    );
  });

  it('refuses text that is not a certificate, and unknown permissions', async () => {
    expect(() => platform.registerIntegration({ certificatePem: 'hello' })).toThrow(/not a PEM X.509 certificate/);
    const other = await createTestCredentials();
    expect(() =>
      platform.registerIntegration({
        certificatePem: other.certificatePem,
        permissions: ['Delete everything' as never],
      }),
    ).toThrow(/unknown permission/);
    expect(() => platform.setIntegrationStatus('no-such-machine', 'Active')).toThrow(/no system integration/);
  });

  it('defaults to Active with both permissions and an assigned machineId', () => {
    expect(integration).toMatchObject({
      machineId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      thumbprint: credentials.thumbprint,
      status: 'Active',
      permissions: ['Send message', 'Retrieve billing data'],
    });
  });

  it('createIntegration returns settings for PlatformAuthModule and for the environment', async () => {
    const created = await platform.createIntegration({ name: 'sample app', permissions: ['Send message'] });

    expect(created).toMatchObject({ name: 'sample app', status: 'Active', permissions: ['Send message'] });
    expect(created.moduleOptions).toEqual({
      baseUrl: platform.url,
      machineId: created.machineId,
      key: { privateKey: created.privateKeyPem, certificate: created.certificatePem },
    });
    expect(created.env).toEqual({
      PLATFORM_BASE_URL: platform.url,
      PLATFORM_MACHINE_ID: created.machineId,
      PLATFORM_PRIVATE_KEY: expect.stringMatching(/^-----BEGIN PRIVATE KEY-----\n/),
      PLATFORM_CERTIFICATE: expect.stringMatching(/^-----BEGIN CERTIFICATE-----\n/),
    });

    platform.setIntegrationStatus(created.machineId, 'Disabled');
    expect(created.status).toBe('Disabled');
  });
});

describe('Date header', () => {
  it('is emulator time on every response, clock offset included', async () => {
    clock.set(Date.UTC(2031, 4, 6, 7, 8, 9, 500));
    platform.setClockOffset(90_000);
    const expected = 'Tue, 06 May 2031 07:09:39 GMT';

    const token = await requestToken(platform, 'not-a-jwt');
    const api = await fetch(`${platform.url}/api/billing`);
    const notFound = await fetch(`${platform.url}/favicon.ico`);
    platform.injectFault({ kind: 'status', status: 503 });
    const faulted = await requestToken(platform, 'x');

    for (const headers of [token.headers, api.headers, notFound.headers, faulted.headers])
      expect(headers.get('date')).toBe(expected);
    clock.set(Date.now());
  });

  it('follows a clockOffsetMs given at start', async () => {
    const ahead = await PlatformEmulator.start({ now: () => clock.now(), clockOffsetMs: -3_600_000 });
    try {
      const response = await fetch(ahead.tokenUrl);
      expect(response.headers.get('date')).toBe(new Date(clock.now() - 3_600_000).toUTCString());
    } finally {
      await ahead.close();
    }
  });
});

describe('faults', () => {
  it('status: answers the given status, body and headers once, then processes normally', async () => {
    platform.injectFault({
      kind: 'status',
      status: 429,
      body: { error: 'slow_down' },
      headers: { 'Retry-After': '2' },
    });

    const faulted = await requestToken(platform, await validAssertion());
    expect(faulted.status).toBe(429);
    expect(faulted.headers.get('retry-after')).toBe('2');
    expect(faulted.body).toEqual({ error: 'slow_down' });
    expect((await requestToken(platform, await validAssertion())).status).toBe(200);
  });

  it('status: a string body is sent as text', async () => {
    platform.injectFault({ kind: 'status', status: 502, body: 'Bad Gateway' });
    const response = await fetch(platform.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ token: await validAssertion() }),
    });
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toBe('Bad Gateway');
  });

  it('are queued first in, first out, per target', async () => {
    platform.injectFault({ kind: 'status', status: 500 });
    platform.injectFault({ kind: 'status', status: 503 });
    platform.injectFault({ kind: 'status', status: 504 }, 'api');

    expect((await callApi(platform, 'billing')).status).toBe(504);
    expect((await requestToken(platform, await validAssertion())).status).toBe(500);
    expect((await requestToken(platform, await validAssertion())).status).toBe(503);
    expect((await requestToken(platform, await validAssertion())).status).toBe(200);
    expect((await callApi(platform, 'billing')).status).toBe(401);
  });

  it('delay: answers normally after the delay', async () => {
    const assertion = await validAssertion();
    platform.injectFault({ kind: 'delay', ms: 150 });
    const events: string[] = [];
    // Node runs timers in the order they fall due: this one, set before the request is sent, is due before the
    // emulator's delay, which starts when the request arrives. A request answered without its delay beats it.
    const delayOver = timerOf(150).then(() => events.push('150 ms timer'));
    const response = await requestToken(platform, assertion);
    events.push('answer');
    await delayOver;
    expect(events).toEqual(['150 ms timer', 'answer']);
    expect(response.status).toBe(200);
    expect(platform.journal.at(-1)).toMatchObject({ verdict: 'accepted', status: 200 });
  });

  it('hang: never answers, until the client gives up', async () => {
    platform.injectFault({ kind: 'hang' });
    const attempt = fetch(platform.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ token: await validAssertion() }),
      signal: AbortSignal.timeout(200),
    });
    await expect(attempt).rejects.toThrow(/aborted|timeout/i);
    expect(platform.journal.at(-1)).toMatchObject({ verdict: 'fault', fault: 'hang', status: 0 });
  });

  it('drop: resets the connection without a response', async () => {
    platform.injectFault({ kind: 'drop' });
    const failure = await fetch(platform.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ token: await validAssertion() }),
    }).then(
      () => undefined,
      (error: unknown) => error as Error & { cause?: { code?: string } },
    );
    expect(failure?.message).toMatch(/fetch failed/);
    expect(failure?.cause?.code).toMatch(/ECONNRESET|UND_ERR_SOCKET/);
    expect((await requestToken(platform, await validAssertion())).status).toBe(200);
  });

  it('malformed-json: 200 application/json with a truncated body', async () => {
    platform.injectFault({ kind: 'malformed-json' });
    const response = await fetch(platform.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ token: await validAssertion() }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    await expect(response.json()).rejects.toThrow(SyntaxError);
  });

  it('html: 200 with an HTML error page', async () => {
    platform.injectFault({ kind: 'html' });
    const response = await fetch(platform.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ token: await validAssertion() }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toMatch(/^<!DOCTYPE html>/);
  });

  it('target api: applies to the placeholder routes, not to the token endpoint', async () => {
    platform.injectFault({ kind: 'html' }, 'api');
    const token = await obtainAccessToken(platform, assertions, clock.now());
    const response = await callApi(platform, 'billing', { token });
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await callApi(platform, 'billing', { token })).status).toBe(200);
  });

  it('refuses a fault it does not know', () => {
    expect(() => platform.injectFault({ kind: 'explode' } as never)).toThrow(/unknown fault kind/);
    expect(() => platform.injectFault({ kind: 'status', status: 42 })).toThrow(/100 to 599/);
    expect(() => platform.injectFault({ kind: 'delay', ms: -1 })).toThrow(/delay/);
  });
});

describe('journal', () => {
  it('records decoded header and claims, never the JWT or the access token', async () => {
    const jwt = await validAssertion();
    const response = await requestToken(platform, jwt);
    const record = platform.journal.at(-1)!;

    expect(record).toEqual({
      at: clock.now(),
      method: 'POST',
      contentType: 'application/x-www-form-urlencoded;charset=UTF-8',
      grantType: 'clientcertificate',
      clientId: 'clientcertificate',
      header: { alg: 'RS256', typ: 'JWT' },
      claims: JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()),
      status: 200,
      verdict: 'accepted',
      machineId: integration.machineId,
      rules: expect.any(Array),
    });
    // Every rule was judged, and passed.
    expect(record.rules!.map((rule) => [rule.rule, rule.outcome])).toEqual(
      CLAIM_RULE_ORDER.map((rule) => [rule, 'ok']),
    );
    const everything = JSON.stringify(platform.journal);
    expect(everything).not.toContain(jwt.split('.')[2]);
    expect(everything).not.toContain(response.body.access_token as string);
  });

  it('records faulted requests with their claims, so retries can be told apart', async () => {
    platform.injectFault({ kind: 'status', status: 503 });
    const jwt = await validAssertion();
    await requestToken(platform, jwt);
    expect(platform.journal.at(-1)).toMatchObject({
      verdict: 'fault',
      fault: 'status',
      status: 503,
      claims: { jti: JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()).jti },
    });
  });

  it('is a snapshot that keeps at most journalLimit entries, dropping the oldest', async () => {
    const small = await PlatformEmulator.start({ journalLimit: 2 });
    try {
      const snapshot = small.journal;
      for (const grantType of ['a', 'b', 'c']) await requestToken(small, 'x', { grant_type: grantType });
      expect(snapshot).toEqual([]);
      expect(small.journal.map((record) => record.grantType)).toEqual(['b', 'c']);
    } finally {
      await small.close();
    }
  });
});

describe('counters', () => {
  it('count exchanges and API calls by outcome, and reset', async () => {
    const token = await obtainAccessToken(platform, assertions, clock.now());
    await requestToken(platform, 'not-a-jwt');
    platform.injectFault({ kind: 'status', status: 500 });
    await requestToken(platform, await validAssertion());

    await callApi(platform, 'billing', { token });
    await callApi(platform, 'messages', { token: 'unknown' });
    platform.setPermissions(integration.machineId, ['Send message']);
    await callApi(platform, 'billing', { token });
    platform.setPermissions(integration.machineId, ['Send message', 'Retrieve billing data']);
    platform.injectFault({ kind: 'status', status: 502 }, 'api');
    await callApi(platform, 'billing', { token });
    await fetch(`${platform.url}/nowhere`);

    expect(platform.counters).toEqual({
      exchanges: { total: 3, accepted: 1, rejected: 1, faulted: 1 },
      apiCalls: {
        total: 5,
        ok: 1,
        unauthorized: 1,
        forbidden: 1,
        faulted: 1,
        throttled: 0,
        maxPerSecond: { [integration.machineId]: expect.any(Number) },
      },
      idempotency: { keys: 0, duplicates: 0, mismatches: 0 },
    });
    platform.resetCounters();
    expect(platform.counters.exchanges.total).toBe(0);
    expect(platform.counters.apiCalls.total).toBe(0);
  });
});

describe('two emulators', () => {
  it('share nothing: integrations, tokens and faults are per instance', async () => {
    const other = await PlatformEmulator.start({ now: () => clock.now() });
    try {
      other.injectFault({ kind: 'status', status: 500 });
      const token = await obtainAccessToken(platform, assertions, clock.now());
      expect((await callApi(other, 'billing', { token })).status).toBe(401);
      const otherAssertions = new AssertionFactory(credentials.privateKeyPem, integration, other.audience);
      expect((await requestToken(other, await otherAssertions.sign({ nowMs: clock.now() }))).status).toBe(500);
      expect((await requestToken(other, await otherAssertions.sign({ nowMs: clock.now() }))).body.error).toBe(
        'invalid_client',
      );
    } finally {
      await other.close();
    }
  });
});

describe('close', () => {
  const openTcpHandles = (): number =>
    process.getActiveResourcesInfo().filter((kind) => kind === 'TCPServerWrap' || kind === 'TCPSocketWrap').length;

  it('stops accepting connections, ends keep-alive and hanging requests, and cancels delays', async () => {
    const baseline = openTcpHandles();
    const closing = await PlatformEmulator.start({ inspector: true });
    const port = Number(new URL(closing.url).port);
    const pendingFaults = async (): Promise<unknown[]> =>
      ((await (await fetch(`${closing.inspectorUrl}journal.json`)).json()) as { faults: unknown[] }).faults;

    // A keep-alive connection that stays idle in the client's pool.
    expect((await fetch(`${closing.url}/nowhere`)).status).toBe(404);
    closing.injectFault({ kind: 'delay', ms: 250 }, 'api');
    const delayed = fetch(`${closing.url}/api/billing`).catch((error: unknown) => error);
    closing.injectFault({ kind: 'hang' });
    const hanging = fetch(closing.tokenUrl, { method: 'POST', body: 'token=x' }).catch((error: unknown) => error);
    await eventually(() => expect(closing.counters.exchanges.total).toBe(1));
    // Both faults taken: the API request is inside its delay.
    await eventually(async () => expect(await pendingFaults()).toEqual([]));

    const apiCallsBeforeClose = closing.counters.apiCalls.total;
    // Started after the emulator's delay of the same length, so due after it.
    const delayOver = timerOf(250);
    // A close() that waited for the hanging request would never resolve: the test would time out.
    await closing.close();
    await closing.close();
    expect(await hanging).toBeInstanceOf(Error);
    expect(await delayed).toBeInstanceOf(Error);
    // A delay that close() failed to cancel would have processed its request, and counted it, by now.
    await delayOver;
    expect(closing.counters.apiCalls.total).toBe(apiCallsBeforeClose);

    const refused = await new Promise<NodeJS.ErrnoException>((resolve) => {
      httpRequest({ host: '127.0.0.1', port, path: '/', agent: false }, () => resolve(new Error('answered')))
        .on('error', resolve)
        .end();
    });
    expect(refused.code).toBe('ECONNREFUSED');
    await eventually(() => expect(openTcpHandles()).toBeLessThanOrEqual(baseline));
  });
});
