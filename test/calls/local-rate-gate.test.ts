import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/testing/fake.clock.js';
import { LocalRateGate } from '../../lib/calls/rate-limit/local-rate.gate.js';
import { RateLimitWaitError } from '../../lib/calls/rate-limit/rate-limit.errors.js';
import { rateLimitShape, shareOf } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { worstPlatformSecond } from './fixtures/paced-turns.js';

const T0 = Date.UTC(2026, 0, 1);

function gate(requestsPerSecond: number, options: { burst?: number; maxWaitMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const waits: number[] = [];
  const limit = new LocalRateGate(
    rateLimitShape(requestsPerSecond, options.burst),
    clock,
    { integration: 'billing', maxWaitMs: options.maxWaitMs ?? 10_000 },
    (ms) => waits.push(ms),
  );
  return { clock, limit, waits };
}

/** Starts `count` acquisitions and records, in order, the fake-clock time at which each was let through. */
function acquireAll(limit: LocalRateGate, clock: FakeClock, count: number, signal?: AbortSignal) {
  const wentAt: (number | undefined)[] = Array.from({ length: count }, () => undefined);
  const order: number[] = [];
  const settled = Array.from({ length: count }, (_, i) =>
    limit.acquire(signal).then(
      () => {
        wentAt[i] = clock.now() - T0;
        order.push(i);
      },
      (error: unknown) => error,
    ),
  );
  return { wentAt, order, settled };
}

/** Lets the microtasks of woken sleepers run. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

async function advanceBy(clock: FakeClock, ms: number, step = 10): Promise<void> {
  await flush();
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await flush();
  }
}

describe('the local rate limit on the fake clock', () => {
  it('lets one second’s worth go at once, then the next only when the first left the window, never more than the limit in any second', async () => {
    const { clock, limit } = gate(5);
    const { wentAt } = acquireAll(limit, clock, 12);
    await flush();
    expect(wentAt.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(wentAt.slice(5).every((t) => t === undefined)).toBe(true);
    expect(limit.waiting).toBe(7);
    await advanceBy(clock, 3_000);
    const times = wentAt.map((t) => t!);
    for (const start of times)
      expect(times.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(5);
    // A plain token bucket with a burst of 5 would let requests 6 to 10 go during the first second; the gate keeps
    // the second's five within 1.1 s, the tenth being headroom for the way to the platform.
    expect(times[5]).toBe(1_100);
  });

  it('under demand that never lets up, sends one request per interval after the first burst, even when its sleeps end late', async () => {
    const { clock, limit } = gate(5);
    const { wentAt } = acquireAll(limit, clock, 16);
    // Time moves 30 ms at a time: each sleep until a turn ends up to 30 ms late, as a busy event loop's does.
    await advanceBy(clock, 3_500, 30);
    const times = wentAt.map((t) => t!);
    expect(times.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    // The window's edge lets one go, not a second burst: the bucket did not refill while the window held them.
    expect(times[5]).toBe(1_110);
    for (let i = 6; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(200 - 30);
    expect(worstPlatformSecond(times, 100)).toBeLessThanOrEqual(5);
    expect(worstPlatformSecond(times, 150)).toBeLessThanOrEqual(6);
  });

  it('spaces requests by the interval when the burst is 1', async () => {
    const { clock, limit } = gate(4, { burst: 1 });
    const { wentAt } = acquireAll(limit, clock, 4);
    await advanceBy(clock, 1_000, 5);
    expect(wentAt).toEqual([0, 250, 500, 750]);
  });

  it('keeps one request every three seconds for 20 a minute', async () => {
    const { clock, limit } = gate(1 / 3);
    const { wentAt } = acquireAll(limit, clock, 3);
    await advanceBy(clock, 7_000, 100);
    expect(wentAt).toEqual([0, 3_300, 6_600]);
  });

  it('serves waiters first come, first served', async () => {
    const { clock, limit } = gate(2, { burst: 1 });
    const { order } = acquireAll(limit, clock, 6);
    await advanceBy(clock, 4_000, 50);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('fails at once, unsent, a request whose turn lies beyond maxWaitMs, naming the integration and the wait', async () => {
    const { clock, limit } = gate(1, { maxWaitMs: 2_500 });
    const { settled } = acquireAll(limit, clock, 4);
    const outcomes = await Promise.race([Promise.all(settled.slice(3)), flush().then(() => 'pending')]);
    const [error] = outcomes as unknown[];
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(error).toMatchObject({ integration: 'billing', waitMs: 3_300, maxWaitMs: 2_500 });
    expect((error as Error).message).toContain('"billing"');
    expect(limit.waiting).toBe(2);
  });

  it('takes an aborted request out of the queue, and those behind it move up', async () => {
    const { clock, limit } = gate(1);
    const first = acquireAll(limit, clock, 1);
    const aborting = new AbortController();
    const leaving = acquireAll(limit, clock, 1, aborting.signal);
    const last = acquireAll(limit, clock, 1);
    await flush();
    aborting.abort(new Error('caller gave up'));
    expect(await leaving.settled[0]).toMatchObject({ message: 'caller gave up' });
    expect(limit.waiting).toBe(1);
    await advanceBy(clock, 1_100);
    expect(first.wentAt).toEqual([0]);
    // Its turn was the aborted request's: one window after the first, not two.
    expect(last.wentAt).toEqual([1_100]);
  });

  it('at close, every queued request fails with the shutdown error, and so does a later one', async () => {
    const { clock, limit } = gate(1);
    const queued = acquireAll(limit, clock, 3);
    await flush();
    expect(limit.waiting).toBe(2);
    expect(clock.pendingSleeps).toBe(1);
    limit.close();
    const outcomes = await Promise.all(queued.settled);
    expect(queued.wentAt).toEqual([0, undefined, undefined]);
    for (const outcome of outcomes.slice(1))
      expect(outcome).toMatchObject({ name: 'TokenExchangeError', reason: 'aborted' });
    expect(limit.waiting).toBe(0);
    expect(clock.pendingSleeps).toBe(0);
    await expect(limit.acquire()).rejects.toMatchObject({ reason: 'aborted' });
  });

  it('holds every request until the end of a Retry-After, and fails queued ones that would wait past maxWaitMs', async () => {
    const { clock, limit } = gate(10, { maxWaitMs: 5_000 });
    const early = acquireAll(limit, clock, 1);
    await flush();
    limit.holdUntil(T0 + 3_000);
    const held = acquireAll(limit, clock, 2);
    limit.holdUntil(T0 + 8_000);
    expect(await Promise.all(held.settled)).toEqual([expect.any(RateLimitWaitError), expect.any(RateLimitWaitError)]);
    const after = acquireAll(limit, clock, 1);
    expect(await after.settled[0]).toBeInstanceOf(RateLimitWaitError);
    await advanceBy(clock, 4_000, 100);
    const late = acquireAll(limit, clock, 1);
    await advanceBy(clock, 4_000, 100);
    expect(early.wentAt).toEqual([0]);
    expect(late.wentAt).toEqual([8_000]);
  });

  it('reports each wait, 0 for a request that went at once', async () => {
    const { clock, limit, waits } = gate(1);
    acquireAll(limit, clock, 2);
    await advanceBy(clock, 1_100, 100);
    expect(waits).toEqual([0, 1_100]);
  });

  it('reports each wait in the asynchronous context of the request whose turn came, not the queue timer’s', async () => {
    const clock = new FakeClock(T0);
    const request = new AsyncLocalStorage<string>();
    const reportedFor: (string | undefined)[] = [];
    const limit = new LocalRateGate(rateLimitShape(1), clock, { integration: 'billing', maxWaitMs: 10_000 }, () =>
      reportedFor.push(request.getStore()),
    );
    const turns = ['first', 'second', 'third'].map((id) => request.run(id, () => limit.acquire()));
    await advanceBy(clock, 3_000, 100);
    await Promise.all(turns);
    // Left enabled, it would keep promise hooks on for the later files of this worker.
    request.disable();
    expect(reportedFor).toEqual(['first', 'second', 'third']);
  });

  it('splits a limit among replicas so that together they stay within it', () => {
    expect(shareOf(rateLimitShape(50), 3)).toMatchObject({ perWindow: 16, burst: 16, windowMs: 1_100 });
    const third = shareOf(rateLimitShape(2), 3);
    expect(third.perWindow).toBe(1);
    expect(third.windowMs).toBeCloseTo(1_650);
  });
});
