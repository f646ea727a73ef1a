import axios from 'axios';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { CallGate } from '../../lib/calls/call-gate.js';
import { CallRetryPolicy } from '../../lib/calls/retry.policy.js';
import { PlatformAuthInterceptor } from '../../lib/http/platform-auth.interceptor.js';
import { BearerPolicy } from '../../lib/http/engine/bearer.policy.js';
import { PlatformFetch } from '../../lib/http/clients/platform-fetch.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

/** A gate that lets every request go and records what the clients asked of it. */
class RecordingGate implements CallGate {
  acquired = 0;
  readonly holds: number[] = [];
  constructor(private readonly refusal?: Error) {}
  acquire(): Promise<void> {
    this.acquired += 1;
    return this.refusal ? Promise.reject(this.refusal) : Promise.resolve();
  }
  holdUntil(untilMs: number): void {
    this.holds.push(untilMs);
  }
}

/** The three ways a client sends, each with the fixture's token provider and `gate`. */
function clients(f: PlatformFixture, gate: CallGate): [string, () => Promise<number>][] {
  const retry = new CallRetryPolicy(
    { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 30_000, budgetPercent: 10, budgetMinPerMinute: 10 },
    { header: 'idempotency-key', methods: new Set() },
    f.clock,
    { retried: () => undefined, retryBudgetExhausted: () => undefined },
  );
  const origins = new Set([new URL(f.platform.url).origin]);
  const policy = new BearerPolicy(f.tokens, origins, { reauthenticate: (resend) => resend() }, gate, retry);
  const platformFetch = PlatformFetch.create(f.platform.url, policy);
  const instance = axios.create({ baseURL: f.platform.url, validateStatus: () => true });
  PlatformAuthInterceptor.create(policy).attach(instance);
  return [
    ['axios', async () => (await instance.get('/api/billing')).status],
    ['PlatformFetch', async () => (await platformFetch.fetch('/api/billing')).status],
    [
      'undici dispatcher',
      async () => {
        const dispatcher = platformFetch.dispatcher as unknown as NonNullable<
          Parameters<typeof request>[1]
        >['dispatcher'];
        const response = await request(`${f.platform.url}/api/billing`, { dispatcher });
        await response.body.dump();
        return response.statusCode;
      },
    ],
  ];
}

describe.each([0, 1, 2])('the gate, client %#', (index) => {
  it('is waited at before every send (first, the 401 re-send, a retry) and held by a 503 with Retry-After', async () => {
    const f = await start();
    const gate = new RecordingGate();
    const [, call] = clients(f, gate)[index];
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 401 }, 'api');
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '3' } }, 'api');
    expect(await call()).toBe(200);
    expect(gate.acquired).toBe(3);
    // Held until 3 s after the 503 came, which is when the re-send went: the wait was on the clock.
    expect(gate.holds).toEqual([f.clock.now()]);
    expect(f.clock.sleeps.at(-1)).toBe(3_000);
    expect(f.platform.counters.apiCalls.total).toBe(3);
  });

  it('refusing a turn fails the call, and nothing is sent', async () => {
    const f = await start();
    const refusal = new Error('rate limit: waited too long');
    const [, call] = clients(f, new RecordingGate(refusal))[index];
    await f.tokens.getAccessToken();
    const failure: unknown = await call().catch((error: unknown) => error);
    expect(String(failure)).toContain('rate limit: waited too long');
    expect(f.platform.counters.apiCalls.total).toBe(0);
  });
});
