import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestCredentials, PlatformEmulator, type RegisteredIntegration } from 'nestjs-platform-auth/testing';
import { AssertionFactory, callApi, obtainAccessToken, requestToken } from './emulator-test-kit.js';

let platform: PlatformEmulator;

beforeAll(async () => {
  platform = await PlatformEmulator.start({ control: true });
});
afterAll(() => platform.close());
beforeEach(() => {
  platform.resetCounters();
});

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** One control request with exactly these headers (fetch would not let a test set Host). */
function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const target = new URL(`/_emulator/control${path}`, platform.url);
  const json = body === undefined ? {} : { 'content-type': 'application/json' };
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, method, path: target.pathname, headers: { ...json, ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: text ? (JSON.parse(text) as Answer['body']) : {} }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('the control endpoint: add, fault, reset', () => {
  it('registers an integration from its certificate, as the portal does: the emulator assigns the machineId and issues tokens for it', async () => {
    const credentials = await createTestCredentials();
    const added = await send('POST', '/integrations', {
      certificatePem: credentials.certificatePem,
      name: 'tenant acme',
    });
    expect(added).toMatchObject({
      status: 201,
      body: {
        url: platform.url,
        audience: platform.audience,
        integration: { name: 'tenant acme', status: 'Active', thumbprint: credentials.thumbprint },
      },
    });
    const integration = added.body.integration as RegisteredIntegration;
    expect(integration.machineId).toMatch(/^[0-9a-f-]{36}$/);
    const assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
    expect((await requestToken(platform, await assertions.sign({ nowMs: Date.now() }))).status).toBe(200);

    const again = await send('POST', '/integrations', { certificatePem: credentials.certificatePem });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({
      error: 'invalid_certificate',
      message: expect.stringContaining('already registered'),
    });
    expect(await send('POST', '/integrations', { certificatePem: 'not a certificate' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_certificate' },
    });
    expect(await send('POST', '/integrations', {})).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
  });

  it('queues what injectFault queues, times copies, used one per request; reset drops the rest and zeroes the counters', async () => {
    const credentials = await createTestCredentials();
    const integration = platform.registerIntegration({ certificatePem: credentials.certificatePem });
    const assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
    const token = await obtainAccessToken(platform, assertions, Date.now());

    const queued = await send('POST', '/faults', {
      target: 'api',
      fault: { kind: 'retry-after', status: 503, retryAfter: 7 },
      times: 2,
    });
    expect(queued).toEqual({ status: 200, body: { pending: { token: 0, api: 2 } } });
    const first = await callApi(platform, 'billing', { token });
    expect([first.status, first.headers.get('retry-after')]).toEqual([503, '7']);
    expect((await send('POST', '/faults', { target: 'token', fault: { kind: 'status', status: 500 } })).body).toEqual({
      pending: { token: 1, api: 1 },
    });

    expect(platform.counters.apiCalls.faulted).toBe(1);
    expect(await send('POST', '/reset')).toEqual({ status: 200, body: { cleared: { token: 1, api: 1 } } });
    expect(platform.counters.apiCalls.total).toBe(0);
    expect((await callApi(platform, 'billing', { token })).status).toBe(200);
    expect((await requestToken(platform, await assertions.sign({ nowMs: Date.now() }))).status).toBe(200);
  });

  it('refuses a fault the queue would refuse, or too many copies, and queues nothing', async () => {
    const refused = [
      { target: 'nowhere', fault: { kind: 'drop' } },
      { target: 'api', fault: { kind: 'status', status: 99 } },
      { target: 'api', fault: { kind: 'retry-after', status: 500, retryAfter: 1 } },
      { target: 'api', fault: { kind: 'explode' } },
      { target: 'api', fault: { kind: 'drop' }, times: 1001 },
      { target: 'api', fault: { kind: 'status', status: 500, headers: { 'x-n': 1 } } },
    ];
    for (const body of refused) {
      const answer = await send('POST', '/faults', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error).toBe('invalid_fault');
    }
    expect(await send('POST', '/reset')).toEqual({ status: 200, body: { cleared: { token: 0, api: 0 } } });
    expect((await send('GET', '/faults')).status).toBe(405);
  });

  it('answers only to clients that name the emulator in Host, and never to a browser', async () => {
    const fault = { target: 'api', fault: { kind: 'drop' } };
    expect((await send('POST', '/faults', fault, { host: 'evil.example' })).status).toBe(421);
    expect((await send('POST', '/reset', undefined, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await send('POST', '/faults', fault, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await send('POST', '/reset')).body).toEqual({ cleared: { token: 0, api: 0 } });
  });
});
