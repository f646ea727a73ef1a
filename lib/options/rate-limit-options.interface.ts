/**
 * The rate limit of one integration's calls to the platform's APIs: every request waits its turn before it is sent
 * (first sends and re-sends alike), in arrival order. With `tokenStore` on Redis the replicas share the limit.
 */
export interface RateLimitOptions {
  /**
   * Requests per second, on average and at most in any one second (its whole part). A fraction is allowed below
   * one a second: `1 / 3` is 20 a minute, one request every three seconds.
   */
  requestsPerSecond: number;
  /** Requests that may go at once after a quiet spell. A whole number. Default and largest: one second's worth. */
  burst?: number;
  /**
   * A request whose turn lies further ahead than this (a long queue, or a `Retry-After` hold) fails at once with
   * `RateLimitWaitError` instead of waiting. Default 10,000 ms.
   */
  maxWaitMs?: number;
}
