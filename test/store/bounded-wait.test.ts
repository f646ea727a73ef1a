import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/testing/fake.clock.js';
import { boundedBy } from '../../lib/util/bounded.util.js';

class Late extends Error {}

describe('boundedBy: the one bound on a wait', () => {
  it('rejects with the caller’s error once the bound passes on the injected clock, and not before', async () => {
    const clock = new FakeClock(0);
    let settled = false;
    const waiting = boundedBy(new Promise<never>(() => undefined), 1_000, () => new Late('no answer'), clock);
    void waiting.catch(() => undefined).finally(() => (settled = true));
    clock.advance(999);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    clock.advance(1);
    await expect(waiting).rejects.toBeInstanceOf(Late);
    expect(clock.pendingTimers).toBe(0);
  });

  it('passes the answer and the failure of the operation through, and cancels its timer', async () => {
    const clock = new FakeClock(0);
    expect(await boundedBy(Promise.resolve('answer'), 1_000, () => new Late(), clock)).toBe('answer');
    expect(clock.pendingTimers).toBe(0);
    await expect(boundedBy(Promise.reject(new TypeError('refused')), 1_000, () => new Late(), clock)).rejects.toThrow(
      TypeError,
    );
    expect(clock.pendingTimers).toBe(0);
  });

  it('lets an answer that came with the expiry win', async () => {
    const clock = new FakeClock(0);
    let answer!: (value: string) => void;
    const waiting = boundedBy(new Promise<string>((resolve) => (answer = resolve)), 1_000, () => new Late(), clock);
    clock.advance(1_000);
    answer('in time');
    await expect(waiting).resolves.toBe('in time');
  });
});
