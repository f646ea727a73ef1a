import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateLimitSchedule, rateLimitShape } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { brokenPromises, worstPlatformSecond, type Turn } from './fixtures/paced-turns.js';

/** Requests per second: whole and fractional, one a second and below. */
const requestsPerSecond = fc.oneof(
  fc.integer({ min: 1, max: 60 }),
  fc.double({ min: 1, max: 60, noNaN: true }),
  fc.double({ min: 0.2, max: 1, noNaN: true }),
);

/**
 * What happens between two turns. A request asks `lagMs` before the turn before it goes (demand that never lets up:
 * someone is always waiting), or, with a negative lag, that long after it (a quiet spell); a 429 answered then holds
 * the limit for `holdMs`.
 */
const step = fc.record({
  lagMs: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: -3_000, max: 0 })),
  holdMs: fc.option(fc.integer({ min: 0, max: 5_000 }), { freq: 8 }),
});

/** The turns `steps` get, each request reserving its turn when it asks, as the store's script does. */
function turnsOf(schedule: RateLimitSchedule, steps: readonly { lagMs: number; holdMs: number | null }[]): Turn[] {
  const turns: Turn[] = [];
  let askedAt = 0;
  for (const { lagMs, holdMs } of steps) {
    if (turns.length > 0) askedAt = Math.max(askedAt, turns.at(-1)!.at - lagMs);
    if (holdMs !== null) schedule.hold(askedAt + holdMs);
    turns.push({ askedAt, at: schedule.take(askedAt) });
  }
  return turns;
}

describe('property: the rate limit paces demand that never lets up, one request per interval after the first burst', () => {
  it('keeps the window, paces every stretch of continuous demand after its burst, and a late second stays near the limit', () => {
    fc.assert(
      fc.property(
        requestsPerSecond,
        fc.option(fc.integer({ min: 1, max: 60 })),
        fc.array(step, { minLength: 1, maxLength: 250 }),
        fc.integer({ min: 0, max: 1_000 }),
        (perSecond, burst, steps, extraLateMs) => {
          const shape = rateLimitShape(perSecond, burst ?? undefined);
          const turns = turnsOf(new RateLimitSchedule(shape), steps);
          expect(brokenPromises(shape, turns, extraLateMs)).toEqual([]);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('with the default burst, saturated at 20/s: after the first burst one turn every 50 ms, and a turn 0.15 s late adds one request to a second, not a burst', () => {
    const shape = rateLimitShape(20);
    const schedule = new RateLimitSchedule(shape);
    const turns = turnsOf(
      schedule,
      Array.from({ length: 80 }, () => ({ lagMs: 1_000, holdMs: null })),
    );
    const times = turns.map((turn) => turn.at);
    expect(times.slice(0, 20)).toEqual(Array.from({ length: 20 }, () => 0));
    // The window's edge lets one go, then the rest of the window's worth one per interval: the bucket did not refill
    // while they waited.
    expect(times.slice(20, 41)).toEqual([...Array.from({ length: 20 }, (_, i) => 1_100 + 50 * i), 2_200]);
    expect(worstPlatformSecond(times, 100)).toBe(20);
    expect(worstPlatformSecond(times, 150)).toBe(21);
  });

  it('after a Retry-After hold, sends one request per interval from its end, not a burst', () => {
    const schedule = new RateLimitSchedule(rateLimitShape(10));
    schedule.hold(5_000);
    expect(Array.from({ length: 4 }, () => schedule.take(0))).toEqual([5_000, 5_100, 5_200, 5_300]);
  });

  it('still lets a whole burst go after a quiet spell', () => {
    const schedule = new RateLimitSchedule(rateLimitShape(10));
    Array.from({ length: 30 }, () => schedule.take(0));
    expect(Array.from({ length: 10 }, () => schedule.take(10_000))).toEqual(Array.from({ length: 10 }, () => 10_000));
  });
});
