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
 * and the largest number seen in any one second, which a measurement reads to check a client's limit. Requests count
 * at the moment they arrived, before their bodies were read and their tokens checked, so the emulator's own work
 * does not bunch them up; they are therefore admitted slightly out of order, and kept sorted. A window `(t - 1 s, t]`
 * ending at each accepted request covers every second in which the count can peak.
 */
export class ApiRateWindows {
  private readonly accepted = new Map<string, number[]>();

  /**
   * Counts a request of `machineId` that arrived at `arrivedAt`, unless `limit` is full: then the 429 to send, its
   * `Retry-After` the whole seconds until the oldest request of the window leaves it. Otherwise the most requests in
   * any window this one is part of.
   */
  admit(machineId: string, limit: EmulatorRateLimit | undefined, arrivedAt: number): number | EmulatorResponse {
    let times = this.accepted.get(machineId);
    if (!times) this.accepted.set(machineId, (times = []));
    // A request admitted late may still fall in the windows of those admitted before it: two windows are kept.
    const keepFrom = Math.max(arrivedAt, times.at(-1) ?? arrivedAt) - 2 * WINDOW_MS;
    times.splice(0, countAtMost(times, keepFrom));
    const inWindow = countAtMost(times, arrivedAt) - countAtMost(times, arrivedAt - WINDOW_MS);
    if (limit && inWindow >= limit.requestsPerSecond) {
      const oldest = times[countAtMost(times, arrivedAt - WINDOW_MS)];
      const seconds = Math.max(1, Math.ceil((oldest + WINDOW_MS - arrivedAt) / 1_000));
      return {
        status: 429,
        headers: { 'retry-after': String(seconds) },
        body: {
          error: 'rate_limited',
          error_description: `more than ${limit.requestsPerSecond} requests in one second from this integration`,
        },
      };
    }
    const at = countAtMost(times, arrivedAt);
    times.splice(at, 0, arrivedAt);
    let busiest = 0;
    for (let i = at; i < times.length && times[i] < arrivedAt + WINDOW_MS; i += 1) {
      busiest = Math.max(busiest, i + 1 - countAtMost(times, times[i] - WINDOW_MS));
    }
    return busiest;
  }
}

/** How many of the sorted `times` are at most `t`. */
function countAtMost(times: readonly number[], t: number): number {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (times[mid] <= t) low = mid + 1;
    else high = mid;
  }
  return low;
}
