import { randomBytes } from 'node:crypto';
import axios from 'axios';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallGate } from '../../lib/calls/call-gate.js';
import { PlatformUnavailableError } from '../../lib/calls/calls.errors.js';
import { rateLimitShape } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { SharedRateGate } from '../../lib/calls/rate-limit/shared-rate.gate.js';
import { CallRetryPolicy } from '../../lib/calls/retry.policy.js';
import { PlatformAuthInterceptor } from '../../lib/http/platform-auth.interceptor.js';
import { BearerPolicy } from '../../lib/http/engine/bearer.policy.js';
import { PlatformFetch } from '../../lib/http/clients/platform-fetch.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { resolveRedisConnection } from '../../lib/store/redis-connection.options.js';
import { OwnedRedisChannel } from '../../lib/store/redis.channel.js';
import { FakeClock } from '../../lib/testing/fake.clock.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useLoopbackServers } from '../support/loopback-server.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { useRedisServer } from '../support/redis-server.js';

const start = usePlatformFixtures();
const foreignServer = useLoopbackServers();
const redis = useRedisServer();
const closing: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

const MAX_DELAY_MS = 30_000;

class RecordingGate implements CallGate {
  readonly holds: number[] = [];
  acquire(): Promise<void> {
    return Promise.resolve();
  }
  holdUntil(untilMs: number): void {
    this.holds.push(untilMs);
  }
}

function retryPolicy(clock: FakeClock): CallRetryPolicy {
  return new CallRetryPolicy(
    { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: MAX_DELAY_MS, budgetPercent: 10, budgetMinPerMinute: 10 },
    { header: 'idempotency-key', methods: new Set() },
    clock,
    { retried: () => undefined, retryBudgetExhausted: () => undefined },
  );
}

/** The three ways a client sends, each with the fixture's token provider and `gate`. */
function clients(f: PlatformFixture, gate: CallGate): [string, (url?: string) => Promise<number>][] {
  const origins = new Set([new URL(f.platform.url).origin]);
  const policy = new BearerPolicy(
    f.tokens,
    origins,
    { reauthenticate: (resend) => resend() },
    gate,
    retryPolicy(f.clock),
  );
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

const FAR: [string, string][] = [
  ['a hundred years in seconds', '3153600000'],
  ['an HTTP date in the year 9999', 'Fri, 31 Dec 9999 23:59:59 GMT'],
  ['more digits than a clock holds', '9'.repeat(400)],
];

describe.each([0, 1, 2])('a Retry-After hold, client %#', (index) => {
  it.each(FAR)(
    'is capped at retry.maxDelayMs for %s, and the call fails at once with PlatformUnavailableError',
    async (_name, retryAfter) => {
      const f = await start();
      const gate = new RecordingGate();
      const [, call] = clients(f, gate)[index];
      await f.tokens.getAccessToken();
      f.platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': retryAfter } }, 'api');
      const failure = await call().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PlatformUnavailableError);
      expect((failure as Error).message).toContain('later than retry.maxDelayMs (30000 ms)');
      expect(gate.holds).toEqual([f.clock.now() + MAX_DELAY_MS]);
      expect(f.platform.counters.apiCalls.total).toBe(1);
    },
  );

  it.each([['-5'], ['soon'], ['1.5'], ['']])(
    'holds nothing for Retry-After %j, and re-sends after its back-off',
    async (retryAfter) => {
      const f = await start();
      const gate = new RecordingGate();
      const [, call] = clients(f, gate)[index];
      await f.tokens.getAccessToken();
      f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': retryAfter } }, 'api');
      expect(await call()).toBe(200);
      expect(gate.holds).toEqual([]);
      expect(f.platform.counters.apiCalls.total).toBe(2);
    },
  );
});

describe.each([0, 1])('a redirect target of another origin, client %#', (index) => {
  it("answering 503 with Retry-After holds nothing of the integration's", async () => {
    const f = await start();
    const foreign = await foreignServer((_req, res) => {
      res.writeHead(503, { 'Retry-After': '20', 'Content-Type': 'application/json' }).end('{}');
    });
    const gate = new RecordingGate();
    const [, call] = clients(f, gate)[index];
    await f.tokens.getAccessToken();
    const redirect = { kind: 'status', status: 307, headers: { location: `${foreign.url}/landing` } } as const;
    for (let i = 0; i < 3; i++) f.platform.injectFault(redirect, 'api');
    // Re-sent after the back-off (not after the foreign 20 s), and the 503 goes to the caller in the end.
    expect(await call()).toBe(503);
    expect(gate.holds).toEqual([]);
    expect(foreign.requests).toHaveLength(3);
    for (const sleep of f.clock.sleeps) expect(sleep).toBeLessThan(20_000);
  });
});

describe('a Retry-After hold the fleet shares through Redis', () => {
  it('lasts no longer than retry.maxDelayMs, and nothing of it stays in Redis longer', async () => {
    const keyBase = `rl-${randomBytes(4).toString('hex')}:{ns}`;
    const gates = [0, 1].map(() => {
      const clock = new FakeClock(Date.now());
      const connection = resolveRedisConnection({ url: redis().url }, new ConfigReport(undefined))!;
      const channel = new OwnedRedisChannel(connection, 10_000, 10_000);
      const gate = new SharedRateGate(
        rateLimitShape(100),
        { send: channel.send, keyBase, operationTimeoutMs: 10_000 },
        clock,
        { integration: 'billing', maxWaitMs: 60_000 },
        { waited: () => undefined, modeChanged: () => undefined },
        new CapturingLogger(),
      );
      closing.push(
        () => gate.close(),
        () => channel.close(),
      );
      return { clock, gate };
    });
    const [told, other] = gates;
    const policy = retryPolicy(told.clock);
    const answer = () =>
      policy.afterAnswer(429, '3153600000', 1, { eligible: true, gate: told.gate, method: 'GET', url: 'x' });
    expect(answer).toThrow(PlatformUnavailableError);
    const holdKey = `${keyBase}:rate:hold`;
    await expect.poll(async () => Number(await redis().command('PTTL', holdKey))).toBeGreaterThan(0);
    const keys = (await redis().command('KEYS', `${keyBase}:rate*`)) as string[];
    expect(keys).toContain(holdKey);
    for (const key of keys) expect(Number(await redis().command('PTTL', key))).toBeLessThanOrEqual(MAX_DELAY_MS);
    // Another replica (one started later alike) is held by it, but no longer than the cap.
    const held = other.gate.acquire().catch((error: unknown) => error);
    await expect.poll(() => other.clock.pendingSleeps).toBe(1);
    expect(other.clock.sleeps[0]).toBeGreaterThan(MAX_DELAY_MS - 10_000);
    expect(other.clock.sleeps[0]).toBeLessThanOrEqual(MAX_DELAY_MS);
    other.gate.close();
    expect(await held).toMatchObject({ reason: 'aborted' });
  });
});
