import type { OptionRow } from './options.table.types.js';

/**
 * Calls to the platform's APIs (`retry`, `idempotencyKey`). The retry policy's variables are `PLATFORM_CALL_RETRY_*`:
 * `PLATFORM_RETRY_MAX_TOTAL_MS` is the token exchange's (`exchange.retry.maxTotalMs`).
 */
export const CALL_ROWS = {
  retry: {
    env: 'PLATFORM_CALL_RETRY',
    kind: 'object',
    toggle: true,
    rule: "re-sends of calls to the platform's APIs after a 429/503 with `Retry-After`, a 502/503/504 or a failed connection, for GET, HEAD, OPTIONS, PUT, DELETE, and POST and PATCH that carry an idempotency key (the library's or the caller's own); `false` turns them off for the integration, `retry: false` on one request for that request",
  },
  'retry.maxAttempts': {
    env: 'PLATFORM_CALL_RETRY_MAX_ATTEMPTS',
    kind: 'number',
    min: 1,
    max: 10,
    default: 3,
    rule: 'sends per call, the first included; 1 turns re-sends off; the one re-send after a 401 is not counted',
  },
  'retry.baseDelayMs': {
    env: 'PLATFORM_CALL_RETRY_BASE_DELAY_MS',
    kind: 'number',
    min: 0,
    default: 200,
    rule: 'first back-off delay without `Retry-After`; doubled per re-send, with equal jitter',
  },
  'retry.maxDelayMs': {
    env: 'PLATFORM_CALL_RETRY_MAX_DELAY_MS',
    kind: 'number',
    min: 0,
    default: 30_000,
    rule: 'longest wait before one re-send; a longer `Retry-After` fails the call at once with `PlatformUnavailableError`',
  },
  'retry.budgetPercent': {
    env: 'PLATFORM_CALL_RETRY_BUDGET_PERCENT',
    kind: 'number',
    min: 0,
    max: 100,
    default: 10,
    rule: "re-sends in the last minute stay within this share of the integration's calls in it (plus the floor below); past it failures reach the caller at once",
  },
  'retry.budgetMinPerMinute': {
    env: 'PLATFORM_CALL_RETRY_BUDGET_MIN_PER_MINUTE',
    kind: 'number',
    min: 0,
    default: 10,
    rule: 're-sends per minute the budget allows however few calls were made',
  },
  idempotencyKey: {
    env: 'PLATFORM_IDEMPOTENCY_KEY',
    kind: 'object',
    toggle: true,
    rule: 'off unless set (`true` or `{}` for the defaults; `header` or `methods` set turns it on too): one key per call of the listed methods, the same on every re-send; protects only where the platform honours it',
  },
  'idempotencyKey.header': {
    env: 'PLATFORM_IDEMPOTENCY_KEY_HEADER',
    kind: 'text',
    default: 'Idempotency-Key',
    rule: "the header that carries the key, any case; a caller's own key in it is kept, and makes a POST or PATCH re-sendable even with `idempotencyKey` off",
  },
  'idempotencyKey.methods': {
    env: 'PLATFORM_IDEMPOTENCY_KEY_METHODS',
    kind: 'list',
    default: ['POST'],
    rule: 'methods that get a key, and so may be re-sent (POST, PATCH); comma-separated in the environment',
  },
} as const satisfies Record<string, OptionRow>;
