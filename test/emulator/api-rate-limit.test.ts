import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { AssertionFactory, callApi, obtainAccessToken } from './emulator-test-kit.js';

const clock = new FakeClock(Date.UTC(2026, 0, 1));
let platform: PlatformEmulator;

beforeAll(async () => {
  platform = await PlatformEmulator.start({ now: () => clock.now() });
});
afterAll(() => platform.close());

/** A new integration (its own window) and a token for it. */
async function integrationWithToken(rateLimit?: { requestsPerSecond: number }) {
  const integration: EmulatedIntegration = await platform.createIntegration(rateLimit && { rateLimit });
  const assertions = new AssertionFactory(integration.privateKeyPem, integration, platform.audience);
  return { integration, token: await obtainAccessToken(platform, assertions, clock.now()) };
}

async function statuses(token: string, count: number): Promise<number[]> {
  const answers: number[] = [];
  for (let i = 0; i < count; i++) answers.push((await callApi(platform, 'billing', { token })).status);
  return answers;
}

describe("the emulator's rate limit per integration", () => {
  it('answers 429 with Retry-After past the limit in one second, counts the 429s, and takes calls again after it', async () => {
    const { integration, token } = await integrationWithToken({ requestsPerSecond: 3 });
    const other = await integrationWithToken();
    platform.resetCounters();
    expect(await statuses(token, 5)).toEqual([200, 200, 200, 429, 429]);
    const refused = await callApi(platform, 'billing', { token });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: 'rate_limited' });
    // The limit is the integration's own: another one is not held back.
    expect(await statuses(other.token, 4)).toEqual([200, 200, 200, 200]);
    clock.advance(999);
    expect(await statuses(token, 1)).toEqual([429]);
    clock.advance(1);
    expect(await statuses(token, 1)).toEqual([200]);
    expect(platform.counters.apiCalls).toMatchObject({
      total: 12,
      ok: 8,
      throttled: 4,
      maxPerSecond: { [integration.machineId]: 3, [other.integration.machineId]: 4 },
    });
  });

  it('changes or lifts the limit on the live integration, and refuses a limit that is no whole number', async () => {
    const { integration, token } = await integrationWithToken();
    integration.rateLimit = { requestsPerSecond: 1 };
    expect(await statuses(token, 2)).toEqual([200, 429]);
    integration.rateLimit = undefined;
    expect(await statuses(token, 2)).toEqual([200, 200]);
    expect(() => (integration.rateLimit = { requestsPerSecond: 0.5 })).toThrow(/whole number >= 1/);
    await expect(platform.createIntegration({ rateLimit: { requestsPerSecond: 0 } })).rejects.toThrow(
      /rateLimit.requestsPerSecond/,
    );
  });

  it('measures the most requests accepted in any one second, sliding', async () => {
    const { integration, token } = await integrationWithToken();
    platform.resetCounters();
    for (let i = 0; i < 6; i++) {
      await callApi(platform, 'billing', { token });
      clock.advance(400);
    }
    // At 0, 400, 800, 1200, 1600, 2000 ms: any second holds three of them at most, never the four a fixed window of
    // 0–1000 plus a second-long burst would suggest.
    expect(platform.counters.apiCalls.maxPerSecond).toEqual({ [integration.machineId]: 3 });
  });

  it('counts a request at the moment it arrived, not when its body was read', async () => {
    const { integration, token } = await integrationWithToken({ requestsPerSecond: 1 });
    platform.resetCounters();
    // A POST whose headers arrive now and whose body arrives 1.5 s later.
    const body = JSON.stringify({ text: 'hello' });
    const slow = request(`${platform.url}/api/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length },
    });
    const answered = new Promise<number>((resolve, reject) => {
      slow.once('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      slow.once('error', reject);
    });
    slow.write(body.slice(0, 5));
    await expect.poll(() => platform.counters.apiCalls.total).toBe(1);
    clock.advance(1_500);
    expect(await statuses(token, 1)).toEqual([200]);
    slow.end(body.slice(5));
    // It arrived alone in its second: accepted, and no second held two of them.
    expect(await answered).toBe(202);
    expect(platform.counters.apiCalls.maxPerSecond).toEqual({ [integration.machineId]: 1 });
  });
});

describe('faults that answer with Retry-After on API routes', () => {
  it('sends 429 with seconds and 503 with an HTTP-date, once each, counting the 429 as throttled', async () => {
    const { token } = await integrationWithToken();
    platform.resetCounters();
    const until = new Date(clock.now() + 30_000);
    platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: 7 }, 'api');
    platform.injectFault({ kind: 'retry-after', status: 503, retryAfter: until }, 'api');
    const first = await callApi(platform, 'messages', { token });
    const second = await callApi(platform, 'messages', { token });
    const third = await callApi(platform, 'messages', { token });
    expect([first.status, first.headers.get('retry-after')]).toEqual([429, '7']);
    expect([second.status, second.headers.get('retry-after')]).toEqual([503, until.toUTCString()]);
    expect(Date.parse(second.headers.get('retry-after')!)).toBe(Math.floor(until.getTime() / 1000) * 1000);
    expect(third.status).toBe(202);
    expect(platform.counters.apiCalls).toMatchObject({ total: 3, faulted: 2, throttled: 1, ok: 1 });
  });

  it('refuses a status other than 429 or 503, and a Retry-After that is neither whole seconds nor a date', () => {
    expect(() => platform.injectFault({ kind: 'retry-after', status: 500 as 503, retryAfter: 1 }, 'api')).toThrow(
      /429 or 503/,
    );
    expect(() => platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: 1.5 }, 'api')).toThrow(
      /whole seconds/,
    );
    expect(() => platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: new Date(NaN) }, 'api')).toThrow(
      /valid Date/,
    );
  });
});
