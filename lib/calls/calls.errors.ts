import { PlatformAuthError } from '../platform-auth.errors.js';

/**
 * The platform answered a call with a 429 or 503 whose `Retry-After` is longer than `retry.maxDelayMs`: the call
 * fails at once rather than waiting, and says when the platform takes calls again. The URL has no query string.
 */
export class PlatformUnavailableError extends PlatformAuthError {
  /** `PLATFORM_AUTH_PLATFORM_UNAVAILABLE`. */
  readonly code = 'PLATFORM_AUTH_PLATFORM_UNAVAILABLE';
  /** When the platform takes calls again: epoch ms, on the integration's clock. */
  readonly availableAtMs: number;

  constructor(
    /** 429 or 503. */
    readonly status: number,
    /** The call's method, upper case. */
    readonly method: string,
    /** The URL that answered, without its query string. */
    readonly url: string,
    /** The platform's `Retry-After`, in ms. */
    readonly retryAfterMs: number,
    /** The longest wait `retry.maxDelayMs` allows. */
    readonly maxDelayMs: number,
    /** When the answer came, on the integration's clock. */
    nowMs: number,
  ) {
    const availableAtMs = nowMs + retryAfterMs;
    super(
      `The platform answered ${status} to ${method} ${url} and takes calls again at ` +
        `${dateText(availableAtMs)} (in ${Math.ceil(retryAfterMs / 1000)} s), later than ` +
        `retry.maxDelayMs (${maxDelayMs} ms) allows waiting; the call was not re-sent`,
    );
    this.availableAtMs = availableAtMs;
  }
}

/** The moment as ISO text; one past any date (a `Retry-After` of more digits than a clock holds) says so. */
function dateText(epochMs: number): string {
  const date = new Date(epochMs);
  return Number.isNaN(date.getTime()) ? 'no date a clock can show' : date.toISOString();
}
