import { setTimeout as delay } from 'node:timers/promises';

/**
 * The one source of time for the module. Tests inject their own (see `FakeClock` in
 * `nestjs-platform-auth/testing`) so renewal, expiry and back-off are exercised without sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves after `ms`; rejects with the signal's reason when aborted. Someone awaits it (a call waiting to be
   * re-sent or for its rate-limit turn, an exchange backing off), so the system clock's keeps the process running
   * meanwhile, as a request in flight would: a script must not end with the call lost. Every such wait ends at
   * shutdown, by its signal.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `callback` once after `ms`; returns the cancel function. Must not keep the process alive. Used by the
   * background checks (certificate expiry, credential reload). Optional: without it a real, unref'd timer is used.
   */
  schedule?(ms: number, callback: () => void): () => void;
}

/** Node's timers fire at once for delays above this (about 24.8 days); later callers re-arm when woken early. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

function realTimer(ms: number, callback: () => void): () => void {
  const timer = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS));
  timer.unref();
  return () => clearTimeout(timer);
}

export const systemClock: Clock = {
  now: () => Date.now(),
  // node's timer rejects an aborted wait with its own AbortError; the contract above is the signal's reason.
  sleep: (ms, signal) =>
    delay(ms, undefined, { signal }).catch((error: unknown) => {
      throw signal?.aborted ? signal.reason : error;
    }),
  schedule: realTimer,
};

/** `clock.schedule`, or a real unref'd timer for a clock that has none. */
export function scheduleOn(clock: Clock, ms: number, callback: () => void): () => void {
  return clock.schedule ? clock.schedule(ms, callback) : realTimer(ms, callback);
}
