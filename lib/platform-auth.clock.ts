import { setTimeout as delay } from 'node:timers/promises';

/**
 * The one source of time for the module. Tests inject their own (see `FakeClock` in
 * `nestjs-platform-auth/testing`) so renewal, expiry and back-off are exercised without sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when aborted. Must not keep the process alive. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, { signal, ref: false }),
};
