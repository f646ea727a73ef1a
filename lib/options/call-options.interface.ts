/**
 * How calls to the platform's APIs (not the token endpoint: that is `exchange.retry`) are re-sent after a transient
 * failure: a 429 or 503 with `Retry-After`, a 502, 503 or 504, or a connection that failed before any response.
 * GET, HEAD, OPTIONS, PUT and DELETE are re-sent; POST and PATCH only with an idempotency key (`idempotencyKey`).
 */
export interface CallRetryOptions {
  /** Sends per call, the first included; 1 turns re-sends off. The one re-send after a 401 is not counted. Default 3. */
  maxAttempts?: number;
  /** First back-off delay when the platform gives no `Retry-After`; doubled per re-send, with equal jitter. Default 200 ms. */
  baseDelayMs?: number;
  /**
   * Longest wait before one re-send. A `Retry-After` beyond it fails the call at once with a
   * `PlatformUnavailableError` that says when the platform takes calls again. Default 30,000 ms.
   */
  maxDelayMs?: number;
  /**
   * The retry budget: re-sends in the last minute stay within this share of the integration's calls in that minute
   * (plus `budgetMinPerMinute`); past it a failure reaches the caller at once. Default 10 %.
   */
  budgetPercent?: number;
  /** Re-sends per minute the budget always allows, however few calls were made. Default 10. */
  budgetMinPerMinute?: number;
}

/**
 * An idempotency key on calls of the listed methods: one key per call (`crypto.randomUUID()`, or the caller's own
 * header value), the same on every re-send, the re-send after a 401 included. A key protects against duplicates only
 * where the platform honours it. Off unless set; `{}` turns it on with the defaults.
 */
export interface IdempotencyKeyOptions {
  /** The header that carries the key. Default `Idempotency-Key`. */
  header?: string;
  /** Methods that get a key (and so may be re-sent, for POST and PATCH). Default `['POST']`. */
  methods?: string[];
}
