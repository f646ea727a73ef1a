import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/testing/fake.clock.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { resolveRedisConnection } from '../../lib/store/redis-connection.options.js';
import { OwnedRedisChannel } from '../../lib/store/redis.channel.js';
import { RateLimitWaitError } from '../../lib/calls/rate-limit/rate-limit.errors.js';
import { rateLimitShape, type RateLimitShape } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { SharedRateGate } from '../../lib/calls/rate-limit/shared-rate.gate.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { brokenPromises, type Turn } from './fixtures/paced-turns.js';
import { useRedisServer, type RedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
const closing: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** One "replica": its own clock, its own connection to the test's redis-server, one bucket per test. */
function replica(
  server: RedisServer,
  keyBase: string,
  shape: RateLimitShape,
  maxWaitMs: number,
  operationTimeoutMs = 10_000,
  /** How long each answer of the store takes, on the replica's clock. */
  answerMs = 0,
) {
  const clock = new FakeClock(Date.now());
  const connection = resolveRedisConnection({ url: server.url }, new ConfigReport(undefined))!;
  // By default, bounds far above any answer a busy machine gives: most tests are about the bucket, not the timeouts.
  const channel = new OwnedRedisChannel(connection, operationTimeoutMs, operationTimeoutMs);
  const logger = new CapturingLogger();
  const modes: string[] = [];
  const waits: number[] = [];
  let asked = 0;
  // The store's bound, which a test may tighten once the bucket is filled: a tight bound from the start would time
  // out the first commands (connecting, loading the script) of a starved process, and the gate would move to its
  // share before the test paused anything.
  let boundMs = operationTimeoutMs;
  const gate = new SharedRateGate(
    shape,
    {
      send:
        answerMs === 0
          ? channel.send
          : (key, args) => {
              // A gate that keeps asking a slow store for one request would never end: the 50th ask fails instead.
              if ((asked += 1) > 50) return Promise.reject(new Error('the store was asked 50 times for one request'));
              return channel.send(key, args).finally(() => clock.advance(answerMs));
            },
      keyBase,
      get operationTimeoutMs() {
        return boundMs;
      },
    },
    clock,
    { integration: 'billing', maxWaitMs },
    { waited: (ms) => waits.push(ms), modeChanged: (mode) => modes.push(mode) },
    logger,
  );
  closing.push(
    () => gate.close(),
    () => channel.close(),
  );
  const bound = (ms: number) => {
    boundMs = ms;
  };
  return { clock, gate, logger, modes, waits, bound };
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

  it('fails a request at maxWaitMs when the store answers, but each answer slower than a window', async () => {
    // 10/s: a window of 1.1 s; every answer takes 1.3 s, so no answer is ever fresh enough to send a shared turn on.
    const { gate } = replica(redis(), freshBase(), rateLimitShape(10), 10_000, 10_000, 1_300);
    await expect(gate.acquire()).rejects.toBeInstanceOf(RateLimitWaitError);
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

  it('at close, requests that moved from the share back to the shared bucket fail with the shutdown error', async () => {
    const one = replica(redis(), freshBase(), rateLimitShape(1), 60_000);
    one.gate.start();
    await one.gate.acquire();
    await redis().kill();
    let queued: Promise<unknown>[];
    try {
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
    // The next probe finds the store back: the five leave the share and wait, behind the fleet's hold, on shared turns.
    one.clock.advance(1_000);
    await expect.poll(() => one.modes).toEqual(['fallback', 'shared']);
    await expect.poll(() => one.clock.pendingSleeps).toBe(5);
    expect(one.gate.status()).toMatchObject({ mode: 'shared', waiting: 5 });
    one.gate.close();
    for (const outcome of await Promise.all(queued))
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
      // Its share: five a second. It opens two windows (2.2 s) after the switch: the other replica may still send
      // shared turns for a window, and the window before that may have been full.
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
      expect(one.clock.sleeps.at(-1)).toBe(2_200);
      one.clock.advance(2_200);
      await first;
    } finally {
      await redis().launch();
    }
    one.clock.advance(550);
    await expect.poll(() => one.modes).toEqual(['fallback', 'shared']);
    expect(one.gate.status().problem).toBeUndefined();
    expect(one.logger.messages('log')).toEqual([expect.stringContaining('share one limit again')]);
    // The first replica back holds the fleet for a probe interval and a window (1.65 s, on the store's clock): the
    // other replicas may still send on their shares until they have probed. The other one waits for it too.
    const next = two.gate.acquire();
    await expect.poll(() => two.clock.pendingSleeps).toBe(1);
    const wait = two.clock.sleeps.at(-1)!;
    expect(wait).toBeGreaterThan(1_000);
    expect(wait).toBeLessThanOrEqual(1_650);
    two.clock.advance(wait);
    await next;
  });
});

describe('the switch between the shared bucket and the share, planned again', () => {
  it('moves the requests sleeping on shared turns to the share, in arrival order, paced from two windows on', async () => {
    const one = replica(redis(), freshBase(), rateLimitShape(10), 10_000);
    one.gate.start();
    // The burst goes at once; the next three sleep on shared turns a window ahead.
    await Promise.all(Array.from({ length: 10 }, () => one.gate.acquire()));
    const went: number[] = [];
    const sleeping = [0, 1, 2].map((i) => one.gate.acquire().then(() => went.push(i)));
    await expect.poll(() => one.clock.pendingSleeps).toBe(3);
    await redis().kill();
    try {
      // Half a window on, the probe of a replica with sleepers finds the store gone.
      one.clock.advance(550);
      await expect.poll(() => one.modes).toEqual(['fallback']);
      const switchedAt = one.clock.now();
      await expect.poll(() => one.clock.pendingSleeps).toBe(1);
      expect(one.gate.status()).toMatchObject({ mode: 'fallback', waiting: 3 });
      // Their shared turns (at 1.1 s) pass without a send: the share opens 2.2 s after the switch.
      one.clock.set(switchedAt + 2_199);
      await Promise.resolve();
      expect(went).toEqual([]);
      one.clock.set(switchedAt + 2_200);
      await expect.poll(() => went).toEqual([0]);
      // Then one per interval (100 ms), no burst.
      one.clock.advance(99);
      await Promise.resolve();
      expect(went).toEqual([0]);
      one.clock.advance(1);
      await expect.poll(() => went).toEqual([0, 1]);
      one.clock.advance(100);
      await Promise.all(sleeping);
      expect(went).toEqual([0, 1, 2]);
    } finally {
      await redis().launch();
    }
  });

  it('does not send a shared turn the store has not confirmed within a window: it moves to the share', async () => {
    const one = replica(redis(), freshBase(), rateLimitShape(10), 10_000);
    await Promise.all(Array.from({ length: 10 }, () => one.gate.acquire()));
    let went = false;
    const next = one.gate.acquire().then(() => (went = true));
    await expect.poll(() => one.clock.pendingSleeps).toBe(1);
    expect(one.modes).toEqual([]);
    // A store that stops answering: a probe then fails after its bound (200 ms of real time).
    one.bound(200);
    redis().pause();
    try {
      // Its turn (about a window ahead, on the store's clock) comes more than a window after the store last answered
      // it: the store may be gone, and the other replicas open their shares counting on this one sending no shared
      // turn later than that.
      one.clock.advance(1_101);
      await expect.poll(() => one.modes).toEqual(['fallback']);
      expect(went).toBe(false);
      expect(one.gate.status()).toMatchObject({ mode: 'fallback', waiting: 1 });
    } finally {
      redis().resume();
    }
    one.clock.advance(2_200);
    await next;
  });
});

describe("property: the fleet's bucket in Redis paces demand that never lets up, one request per interval after the first burst", () => {
  /**
   * The turns a replica's gate reserves for `count` requests asked one after another, none of them sent yet (the
   * gate's clock stands still), so each asks before the turn before it: demand that never lets up. Each turn is read
   * back from the bucket's window in Redis, on the store's clock, with the wait the gate was told: the two give when
   * it asked. A Retry-After `hold.ms` long reaches the gate before the request at `hold.before`.
   */
  async function reservedTurns(
    shape: RateLimitShape,
    count: number,
    hold: { before: number; ms: number } | null,
  ): Promise<Turn[]> {
    const base = freshBase();
    const { clock, gate } = replica(redis(), base, shape, 60_000);
    const reader = new OwnedRedisChannel(
      resolveRedisConnection({ url: redis().url }, new ConfigReport(undefined))!,
      10_000,
      10_000,
    );
    closing.push(() => reader.close());
    const turns: Turn[] = [];
    let went = 0;
    for (let i = 0; i < count; i++) {
      if (hold?.before === i) gate.holdUntil(clock.now() + hold.ms);
      const sleepsBefore = clock.sleeps.length;
      gate.acquire().then(
        () => (went += 1),
        () => undefined,
      );
      await expect.poll(() => went + clock.pendingSleeps, { interval: 1 }).toBe(i + 1);
      const waitMs = clock.sleeps.length > sleepsBefore ? clock.sleeps.at(-1)! : 0;
      const [at] = (await reader.send(`${base}:rate`, ['LRANGE', `${base}:rate:window`, '-1', '-1'])) as string[];
      turns.push({ askedAt: Number(at) - waitMs, at: Number(at) });
    }
    gate.close();
    return turns;
  }

  it('keeps the window, paces after the burst, and a late second stays near the limit, with the default burst', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 25 }),
        fc.option(fc.record({ before: fc.integer({ min: 1, max: 40 }), ms: fc.integer({ min: 0, max: 3_000 }) })),
        fc.integer({ min: 0, max: 500 }),
        async (perSecond, hold, extraLateMs) => {
          const shape = rateLimitShape(perSecond);
          // Three windows' worth: the first burst's requests each ask after the one before went, so continuous demand
          // starts at the first request the window pushes back, and its own first window's worth is let off.
          const turns = await reservedTurns(shape, 3 * shape.perWindow + 5, hold);
          expect(brokenPromises(shape, turns, extraLateMs)).toEqual([]);
        },
      ),
      { numRuns: 6 },
    );
  });
});
