import type { OptionRow } from './options.table.types.js';

/** The rate limit of calls to the platform's APIs (`rateLimit`). */
export const RATE_LIMIT_ROWS = {
  rateLimit: {
    kind: 'object',
    rule: "off by default; requests to the platform's APIs wait their turn, as the `rateLimit.*` rows say; with `tokenStore` on Redis the replicas share one limit",
  },
  'rateLimit.requestsPerSecond': {
    env: 'PLATFORM_RATE_LIMIT_REQUESTS_PER_SECOND',
    kind: 'number',
    rule: 'required with `rateLimit`; more than 0, a fraction allowed (`1/3` is 20 a minute); never more than its whole part in any one second',
  },
  'rateLimit.burst': {
    env: 'PLATFORM_RATE_LIMIT_BURST',
    kind: 'number',
    min: 1,
    rule: "requests that may go at once after a quiet spell; a whole number; default and largest one second's worth (at least 1)",
  },
  'rateLimit.maxWaitMs': {
    env: 'PLATFORM_RATE_LIMIT_MAX_WAIT_MS',
    kind: 'number',
    min: 0,
    default: 10_000,
    rule: 'a request whose turn (or the end of a `Retry-After` hold) lies further ahead fails at once with `RateLimitWaitError`, unsent',
  },
} as const satisfies Record<string, OptionRow>;
