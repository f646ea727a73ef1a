import type { OptionRow } from './options.table.types.js';

/** The token exchange (`exchange`). */
export const EXCHANGE_ROWS = {
  exchange: {
    kind: 'object',
    rule: 'how an assertion is exchanged for a token, as the `exchange.*` rows say',
  },
  'exchange.retry': {
    kind: 'object',
    rule: "network errors, timeouts, 5xx, 408 and 429 are retried within one exchange, as the `exchange.retry.*` rows say; the top-level `retry` is the policy of calls to the platform's APIs",
  },
  'exchange.retry.maxAttempts': {
    kind: 'number',
    min: 1,
    default: 4,
    rule: 'attempts per exchange, the first included',
  },
  'exchange.retry.baseDelayMs': {
    kind: 'number',
    min: 0,
    default: 200,
    rule: 'first back-off delay; doubled per attempt, with equal jitter',
  },
  'exchange.retry.maxDelayMs': {
    kind: 'number',
    min: 0,
    default: 5_000,
    rule: 'largest single delay; a longer `Retry-After` ends the exchange and is honoured by the failure back-off',
  },
  'exchange.retry.maxTotalMs': {
    env: 'PLATFORM_RETRY_MAX_TOTAL_MS',
    kind: 'number',
    min: 0,
    default: 30_000,
    rule: 'budget of one exchange, all attempts and delays included',
  },
  'exchange.timeoutMs': {
    env: 'PLATFORM_EXCHANGE_TIMEOUT_MS',
    kind: 'number',
    min: 1,
    default: 10_000,
    rule: 'bound on one token request, body included',
  },
  'exchange.path': {
    kind: 'text',
    default: '/loginservice/connect/token',
    rule: 'the token endpoint below `baseUrl`',
  },
  'exchange.encoding': {
    kind: 'enum',
    values: ['jwt', 'base64'],
    default: 'jwt',
    rule: 'how the assertion travels in the `token` field: `base64` wraps it for a platform that wants that',
  },
  'exchange.maxResponseBytes': {
    kind: 'number',
    min: 256,
    default: 64 * 1024,
    rule: 'a larger token response is refused',
  },
  'exchange.failureBackoffMs': {
    kind: 'number',
    min: 0,
    default: 1_000,
    rule: 'after a failed exchange callers fail fast this long, doubling per consecutive failure up to 30 s',
  },
} as const satisfies Record<string, OptionRow>;
