import type { EmulatorResponse } from './emulator.http.js';

/** The platform's rate limit of one integration on the API routes, as the emulator applies it. */
export interface EmulatorRateLimit {
  /** Requests accepted in any one second (a sliding window); past it the API answers 429 with `Retry-After`. */
  requestsPerSecond: number;
}

const WINDOW_MS = 1_000;

/** Throws unless `limit` is absent or a whole number of requests per second, at least 1. */
export function checkRateLimit(limit: EmulatorRateLimit | undefined, where: string): EmulatorRateLimit | undefined {
  if (limit === undefined) return undefined;
  const perSecond = (limit as Partial<EmulatorRateLimit> | null)?.requestsPerSecond;
  if (!(Number.isSafeInteger(perSecond) && perSecond! >= 1))
    throw new Error(`${where}: rateLimit.requestsPerSecond must be a whole number >= 1, got ${String(perSecond)}`);
  return { requestsPerSecond: perSecond! };
}

/**
 * The API requests each integration had accepted in the last second, on emulator time: what its rate limit counts,
 * and the largest number seen in any one second, which a measurement reads to check a client's limit. A window
 * `(t - 1 s, t]` ending at each accepted request covers every second in which the count can peak.
 */
export class ApiRateWindows {
  private readonly accepted = new Map<string, number[]>();

  /**
   * Counts a request of `machineId` at `now`, unless `limit` is full: then the 429 to send, its `Retry-After` the
   * whole seconds until the oldest request of the window leaves it. Otherwise the requests in the window, this one
   * included.
   */
  admit(machineId: string, limit: EmulatorRateLimit | undefined, now: number): number | EmulatorResponse {
    let times = this.accepted.get(machineId);
    if (!times) this.accepted.set(machineId, (times = []));
    let stale = 0;
    while (stale < times.length && times[stale] <= now - WINDOW_MS) stale += 1;
    times.splice(0, stale);
    if (limit && times.length >= limit.requestsPerSecond) {
      const seconds = Math.max(1, Math.ceil((times[0] + WINDOW_MS - now) / 1_000));
      return {
        status: 429,
        headers: { 'retry-after': String(seconds) },
        body: {
          error: 'rate_limited',
          error_description: `more than ${limit.requestsPerSecond} requests in one second from this integration`,
        },
      };
    }
    times.push(now);
    return times.length;
  }
}
