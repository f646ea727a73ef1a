import type { OptionRow } from './options.table.types.js';

/**
 * Calls to the platform's APIs (`retry`, `idempotencyKey`). Inside the resolvers the retry policy is `callRetry`:
 * `retry` there is the token exchange's (`exchange.retry`), the name it had in earlier releases.
 */
export const CALL_ROWS = {
  retry: {
    kind: 'object',
    internal: 'callRetry',
    rule: "re-sends of calls to the platform's APIs after a 429/503 with `Retry-After`, a 502/503/504 or a failed connection, for GET, HEAD, OPTIONS, PUT, DELETE (POST and PATCH with an idempotency key); `retry: false` on one request turns it off",
  },
  'retry.maxAttempts': {
    internal: 'callRetry.maxAttempts',
    kind: 'number',
    min: 1,
    max: 10,
    default: 3,
    rule: 'sends per call, the first included; 1 turns re-sends off; the one re-send after a 401 is not counted',
  },
  'retry.baseDelayMs': {
    internal: 'callRetry.baseDelayMs',
    kind: 'number',
    min: 0,
    default: 200,
    rule: 'first back-off delay without `Retry-After`; doubled per re-send, with equal jitter',
  },
  'retry.maxDelayMs': {
    internal: 'callRetry.maxDelayMs',
    kind: 'number',
    min: 0,
    default: 30_000,
    rule: 'longest wait before one re-send; a longer `Retry-After` fails the call at once with `PlatformUnavailableError`',
  },
  'retry.budgetPercent': {
    internal: 'callRetry.budgetPercent',
    kind: 'number',
    min: 0,
    max: 100,
    default: 10,
    rule: "re-sends in the last minute stay within this share of the integration's calls in it (plus the floor below); past it failures reach the caller at once",
  },
  'retry.budgetMinPerMinute': {
    internal: 'callRetry.budgetMinPerMinute',
    kind: 'number',
    min: 0,
    default: 10,
    rule: 're-sends per minute the budget allows however few calls were made',
  },
  idempotencyKey: {
    kind: 'object',
    internal: 'idempotencyKey',
    rule: 'off unless set (`{}` for the defaults): one key per call, the same on every re-send; protects only where the platform honours it',
  },
  'idempotencyKey.header': {
    kind: 'text',
    default: 'Idempotency-Key',
    rule: "the header that carries the key; a caller's own value in it is kept",
  },
  'idempotencyKey.methods': {
    kind: 'list',
    default: ['POST'],
    rule: 'methods that get a key, and so may be re-sent (POST, PATCH)',
  },
} as const satisfies Record<string, OptionRow>;
