/**
 * Where every request to the platform's APIs waits its turn, whatever client sends it: the rate limit of the
 * integration (a token bucket, shared by the fleet through the store) and any hold a 429 or 503 with `Retry-After`
 * put on it. The clients call `acquire()` before each request they send, the first and every re-send alike, and
 * `holdUntil()` when the platform answers that it takes no calls until a moment.
 */
export interface CallGate {
  /** Resolves when this request may go; rejects with a typed error once waiting would pass the limit's `maxWaitMs`. */
  acquire(signal?: AbortSignal): Promise<void>;
  /** The platform takes no calls from this integration until `untilMs` (epoch ms on the integration's clock). */
  holdUntil(untilMs: number): void;
}

/** No rate limit configured: every request goes at once, and a hold is left to the retry policy. */
export const OPEN_GATE: CallGate = {
  acquire: () => Promise.resolve(),
  holdUntil: () => undefined,
};
