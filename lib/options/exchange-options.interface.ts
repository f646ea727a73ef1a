/** How the module exchanges an assertion for an access token at the platform's token endpoint. */
export interface ExchangeOptions {
  /** Retry policy for transient exchange failures (network, timeout, 5xx, 408, 429). */
  retry?: {
    /** Attempts per exchange, the first included. Default 4. */
    maxAttempts?: number;
    /** First back-off delay; doubled each attempt, with full jitter. Default 200 ms. */
    baseDelayMs?: number;
    /** Largest single delay, `Retry-After` included. Default 5,000 ms. */
    maxDelayMs?: number;
    /** Budget for one exchange, all attempts and delays included. Default 30,000 ms. */
    maxTotalMs?: number;
  };
  /** Timeout of one token request, body included. Default 10,000 ms. */
  timeoutMs?: number;
  /** The token endpoint below `baseUrl`. Default `/loginservice/connect/token`. */
  path?: string;
  /** How the assertion travels in the `token` form field. Default `jwt` (the compact JWT as is). */
  encoding?: 'jwt' | 'base64';
  /** Largest token response body accepted. Default 64 KiB. */
  maxResponseBytes?: number;
  /** After a failed exchange, callers wait this long before the next attempt. Default 1,000 ms. */
  failureBackoffMs?: number;
}

/** The exchange's retry policy (`exchange.retry`). */
export type RetryOptions = NonNullable<ExchangeOptions['retry']>;
