import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, type PlatformAuthOptions } from 'nestjs-platform-auth';
import type { PlatformOutbox } from 'nestjs-platform-auth/outbox';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures, usePlatformBehindProxy, type OutboxFixture } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

const behind = usePlatformBehindProxy();

const CONCURRENCY = 4;
const BACKLOG = 10_000;
let queues = 0;

/** Two tenants, `a` and `b`, each an integration of the emulator sending through the proxy (which records the keys). */
async function tenants(extra: Partial<Record<'a' | 'b', Partial<PlatformAuthOptions>>> = {}) {
  const settings: Record<string, PlatformAuthOptions> = {};
  for (const id of ['a', 'b'] as const) {
    const integration = await behind().platform.createIntegration();
    const route = { baseUrl: behind().proxy.url, audience: new URL(behind().platform.url).host };
    settings[id] = { ...integration.moduleOptions, ...route, startupCheck: 'off', ...extra[id] };
  }
  return () => Promise.resolve([PlatformAuthModule.forTenants({ resolve: async (id) => settings[id] })]);
}

/** Enqueues `count` messages of `tenant`, keys `<prefix>-1` …, a few hundred at a time. */
async function enqueueMany(outbox: PlatformOutbox, tenant: string, prefix: string, count: number): Promise<void> {
  for (let from = 1; from <= count; from += 250) {
    const batch = Array.from({ length: Math.min(250, count - from + 1) }, (_, i) =>
      outbox.enqueue({
        tenant,
        method: 'POST',
        path: '/api/messages',
        body: { n: from + i },
        idempotencyKey: `${prefix}-${from + i}`,
      }),
    );
    await Promise.all(batch);
  }
}

/** The sends of keys starting with `prefix` the platform received so far. */
const sendsOf = (prefix: string) => behind().proxy.keys.filter((key) => key.startsWith(`${prefix}-`));

describe('PlatformOutbox: fair between tenants', () => {
  it(`sends a message tenant B enqueued behind tenant A's ${BACKLOG} within the next 2 × concurrency sends`, async () => {
    const queueName = `outbox-fair-${process.pid}-${(queues += 1)}`;
    const imports = await tenants();
    const enqueuer = await start(redis().url, { platform: behind().platform, queueName, worker: false, imports });
    await enqueueMany(enqueuer.outbox, 'a', 'backlog-a', BACKLOG);
    await enqueuer.outbox.enqueue({ tenant: 'b', method: 'POST', path: '/api/messages', idempotencyKey: 'behind-b-1' });
    const before = behind().proxy.keys.length;

    await start(redis().url, { platform: behind().platform, queueName, worker: { concurrency: CONCURRENCY }, imports });
    await eventually(() => expect(behind().proxy.keys.length - before).toBeGreaterThanOrEqual(2 * CONCURRENCY));
    const first = behind().proxy.keys.slice(before, before + 2 * CONCURRENCY);
    expect(first).toContain('behind-b-1');
    console.log(`fairness: B's message was send ${first.indexOf('behind-b-1') + 1} behind A's ${BACKLOG}`);
  });

  it(`sends it within 2 × concurrency sends of its enqueue while the workers drain A's backlog`, async () => {
    const queueName = `outbox-fair-${process.pid}-${(queues += 1)}`;
    const imports = await tenants();
    const worker = await start(redis().url, {
      platform: behind().platform,
      queueName,
      worker: { concurrency: CONCURRENCY },
      imports,
    });
    // B's tenant built and holding its token first: its first send waits for nothing but its turn.
    await worker.outbox.enqueue({ tenant: 'b', method: 'POST', path: '/api/messages', idempotencyKey: 'draining-b-0' });
    await eventually(() => expect(sendsOf('draining-b')).toEqual(['draining-b-0']));
    await enqueueMany(worker.outbox, 'a', 'draining-a', BACKLOG);
    await eventually(() => expect(sendsOf('draining-a').length).toBeGreaterThanOrEqual(100));
    await worker.outbox.enqueue({ tenant: 'b', method: 'POST', path: '/api/messages', idempotencyKey: 'draining-b-1' });
    const sendsAtEnqueue = behind().proxy.keys.length;

    await eventually(() => expect(behind().proxy.keys.length - sendsAtEnqueue).toBeGreaterThanOrEqual(2 * CONCURRENCY));
    const next = behind().proxy.keys.slice(sendsAtEnqueue, sendsAtEnqueue + 2 * CONCURRENCY);
    expect(next).toContain('draining-b-1');
    expect(sendsOf('draining-a').length).toBeLessThan(BACKLOG);
  });
});

describe('PlatformOutbox: a held tenant holds no worker slot', () => {
  /** Twenty messages of each tenant, A's first, and a worker with `concurrency`. */
  async function heldFixture(imports: () => Promise<unknown[]>, concurrency: number): Promise<OutboxFixture> {
    const queueName = `outbox-fair-${process.pid}-${(queues += 1)}`;
    // Back-offs up to the 60 s the platform may name.
    const retry = { attempts: 3, delayMs: 1, maxDelayMs: 600_000 };
    const f = await start(redis().url, {
      platform: behind().platform,
      queueName,
      worker: false,
      imports: imports as never,
      retry,
    });
    await enqueueMany(f.outbox, 'a', `${queueName}-a`, 20);
    await enqueueMany(f.outbox, 'b', `${queueName}-b`, 20);
    return start(redis().url, {
      platform: behind().platform,
      queueName,
      worker: { concurrency },
      imports: imports as never,
      retry,
    });
  }

  it('sends no more of a tenant the platform answered 429 with Retry-After, and every other tenant meanwhile', async () => {
    const imports = await tenants();
    // The first send, A's, is answered 429 "not for a minute".
    behind().platform.injectFault({ kind: 'status', status: 429, headers: { 'retry-after': '60' } }, 'api');
    const f = await heldFixture(imports, 1);
    const a = `${f.queueName}-a`;
    const b = `${f.queueName}-b`;

    await eventually(() => expect(sendsOf(b)).toHaveLength(20));
    expect(sendsOf(a)).toEqual([`${a}-1`]);
    // A's other messages wait out the hold in the queue's delayed set: taken, put back, never sent.
    await eventually(async () => expect(await f.outbox.status()).toMatchObject({ sent: 20, delayed: 20 }));
  });

  it("holds one slot at most for a tenant waiting for its rate limit's turn, and sends every other tenant meanwhile", async () => {
    // A's rate limit has a turn every 5 s on a clock that does not move: its second send waits for as long as the test.
    const clock = new FakeClock();
    const limited = { clock, rateLimit: { requestsPerSecond: 0.2, burst: 1, maxWaitMs: 60_000 } };
    const imports = await tenants({ a: limited });
    const f = await heldFixture(imports, CONCURRENCY);
    const a = `${f.queueName}-a`;
    const b = `${f.queueName}-b`;
    try {
      await eventually(() => expect(sendsOf(b)).toHaveLength(20));
      expect(sendsOf(a)).toEqual([`${a}-1`]);
    } finally {
      // The send waiting for its turn goes, so the worker can finish it and close.
      clock.advance(600_000);
    }
  });
});
