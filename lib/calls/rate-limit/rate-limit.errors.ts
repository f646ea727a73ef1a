import { PlatformAuthError } from '../../platform-auth.errors.js';

/**
 * A request to the platform's API was not sent: its turn under the integration's rate limit (or the end of a hold
 * after a 429 or 503 with `Retry-After`) lies further ahead than `rateLimit.maxWaitMs`. Nothing was sent; trying
 * again later, or with fewer requests at once, gets through.
 */
export class RateLimitWaitError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_RATE_LIMIT_WAIT';

  constructor(
    /** The integration whose limit it is: `default`, or the name given to `forRoot`. */
    readonly integration: string,
    /** How long the request would have waited for its turn, ms. */
    readonly waitMs: number,
    /** The integration's `rateLimit.maxWaitMs`. */
    readonly maxWaitMs: number,
  ) {
    super(
      `Rate limit of integration "${integration}": this request's turn is ${Math.ceil(waitMs)} ms away, more than rateLimit.maxWaitMs (${maxWaitMs} ms); it was not sent`,
    );
  }
}
