import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/testing/fake.clock.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { resolveRedisConnection } from '../../lib/store/redis-connection.options.js';
import { OwnedRedisChannel } from '../../lib/store/redis.channel.js';
import { RateLimitWaitError } from '../../lib/calls/rate-limit/rate-limit.errors.js';
import { rateLimitShape, type RateLimitShape } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { SharedRateGate } from '../../lib/calls/rate-limit/shared-rate.gate.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useRedisServer, type RedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
const closing: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** One "replica": its own clock, its own connection to the test's redis-server, one bucket per test. */
function replica(server: RedisServer, keyBase: string, shape: RateLimitShape, maxWaitMs: number) {
  const clock = new FakeClock(Date.now());
  const connection = resolveRedisConnection({ url: server.url }, new ConfigReport(undefined))!;
  // Bounds far above any answer a busy machine gives: these tests are about the bucket, not the store's timeouts.
  const channel = new OwnedRedisChannel(connection, 10_000, 10_000);
  const logger = new CapturingLogger();
  const modes: string[] = [];
  const waits: number[] = [];
  const gate = new SharedRateGate(
    shape,
    { send: channel.send, keyBase, operationTimeoutMs: 10_000 },
    clock,
    { integration: 'billing', maxWaitMs },
    { waited: (ms) => waits.push(ms), modeChanged: (mode) => modes.push(mode) },
    logger,
  );
  closing.push(
    () => gate.close(),
    () => channel.close(),
  );
  return { clock, gate, logger, modes, waits };
}

function freshBase(): string {
  return `rl-${randomBytes(4).toString('hex')}:{ns}`;
}

describe('the rate limit a fleet shares through Redis', () => {
  it('holds across replicas: one request a minute lets exactly one of six go, across three replicas', async () => {
    const base = freshBase();
    const replicas = [0, 1, 2].map(() => replica(redis(), base, rateLimitShape(1 / 60), 90_000));
    const failures: unknown[] = [];
    for (const { gate } of replicas) {
      for (let i = 0; i < 2; i++) gate.acquire().catch((error: unknown) => failures.push(error));
    }
    // Each replica on its own would let one go at once: three. Shared, one goes, one waits a minute, four fail.
    await expect
      .poll(() => failures.length + replicas.reduce((n, r) => n + r.waits.length + r.clock.pendingSleeps, 0))
      .toBe(6);
    expect(failures).toHaveLength(4);
    for (const error of failures) expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(replicas.flatMap((r) => r.waits)).toEqual([0]);
    const sleeping = replicas.find((r) => r.clock.pendingSleeps === 1)!;
    expect(sleeping.clock.sleeps[0]).toBeGreaterThan(30_000);
    expect(sleeping.clock.sleeps[0]).toBeLessThanOrEqual(66_000);
    expect(sleeping.gate.status()).toMatchObject({ mode: 'shared', waiting: 1 });
  });

  it('gives up a turn it comes back to too late, and takes a new one instead of sending beside later turns', async () => {
    const { clock, gate } = replica(redis(), freshBase(), rateLimitShape(1 / 60), 90_000);
    await gate.acquire();
    const second = gate.acquire().catch((e: unknown) => e);
    await expect.poll(() => clock.pendingSleeps).toBe(1);
    // The event loop "wakes" two minutes late: the turn a minute ahead is stale, and the next one lies beyond
    // maxWaitMs counted from when the request started waiting.
    clock.advance(120_000);
    expect(await second).toBeInstanceOf(RateLimitWaitError);
  });

  it('holds the whole fleet after one replica is told Retry-After', async () => {
    const base = freshBase();
    const [told, other] = [0, 1].map(() => replica(redis(), base, rateLimitShape(100), 10_000));
    told.gate.holdUntil(told.clock.now() + 30_000);
    // Its own next request follows the hold on its connection, so once it is refused the hold is in Redis.
    expect(await told.gate.acquire().catch((e: unknown) => e)).toBeInstanceOf(RateLimitWaitError);
    const error = await other.gate.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect((error as RateLimitWaitError).waitMs).toBeGreaterThan(10_000);
    expect((error as RateLimitWaitError).waitMs).toBeLessThanOrEqual(30_000);
  });

  it('at close, requests still queued on a share given up when Redis came back fail with the shutdown error', async () => {
    const one = replica(redis(), freshBase(), rateLimitShape(1), 60_000);
    one.gate.start();
    await one.gate.acquire();
    await redis().kill();
    let queued: Promise<unknown>[];
    try {
      // One a second on its share: turns at 1 s, 2 s, … 5 s from now.
      queued = Array.from({ length: 5 }, () =>
        one.gate.acquire().then(
          () => 'went',
          (error: unknown) => error,
        ),
      );
      await expect.poll(() => one.modes).toEqual(['fallback']);
    } finally {
      await redis().launch();
    }
    one.clock.advance(1_000);
    // Past the probe interval a request asks the store again, which answers: the share is given up with four queued.
    const later = one.gate.acquire().then(
      () => 'went',
      (error: unknown) => error,
    );
    await expect.poll(() => one.modes).toEqual(['fallback', 'shared']);
    one.gate.close();
    const outcomes = await Promise.all([...queued, later]);
    expect(outcomes[0]).toBe('went');
    for (const outcome of outcomes.slice(1, 5))
      expect(outcome).toMatchObject({ name: 'TokenExchangeError', reason: 'aborted' });
    expect(one.clock.pendingSleeps).toBe(0);
  });

  it('keeps its share while Redis is down, says so, and shares again once Redis is back', async () => {
    const base = freshBase();
    const [one, two] = [0, 1].map(() => replica(redis(), base, rateLimitShape(10), 10_000));
    one.gate.start();
    two.gate.start();
    await one.gate.acquire();
    await two.gate.acquire();
    // The store's answer to this one counts both: the other replica's call above went first.
    await one.gate.acquire();
    expect(one.gate.status()).toMatchObject({ mode: 'shared', replicasSeen: 2, requestsPerSecond: 10 });

    await redis().kill();
    try {
      // Its share: five a second, paced from the start (what the fleet sent just before is unknown to it), so
      // the first request on it waits one interval instead of opening a burst on top of the fleet's.
      const first = one.gate.acquire();
      await expect.poll(() => one.clock.pendingSleeps).toBe(1);
      expect(one.gate.status()).toMatchObject({
        mode: 'fallback',
        replicasSeen: 2,
        requestsPerSecond: 5,
        problem: expect.any(String),
      });
      expect(one.modes).toEqual(['fallback']);
      expect(one.logger.messages('warn')).toEqual([expect.stringContaining('5 requests/s (1/2 of 10)')]);
      expect(one.clock.sleeps.at(-1)).toBe(200);
      one.clock.advance(200);
      await first;
    } finally {
      await redis().launch();
    }
    one.clock.advance(1_000);
    await one.gate.acquire();
    expect(one.gate.status()).toMatchObject({ mode: 'shared' });
    expect(one.gate.status().problem).toBeUndefined();
    expect(one.modes).toEqual(['fallback', 'shared']);
    expect(one.logger.messages('log')).toEqual([expect.stringContaining('share one limit again')]);
    // The bucket never saw the request sent on the share 1 s ago: the fleet waits until it has left the window.
    // Its next request follows that hold on its connection, and waits what is left of it: 100 ms at most.
    const next = one.gate.acquire();
    await expect.poll(() => one.clock.pendingSleeps).toBe(1);
    const wait = one.clock.sleeps.at(-1)!;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(100);
    one.clock.advance(wait);
    await next;
  });
});
