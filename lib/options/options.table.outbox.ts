import type { OptionRow } from './options.table.types.js';

/**
 * The outbox's settings a team sets per environment (`nestjs-platform-auth/outbox`), by their option in
 * `PlatformOutboxModule.forRoot`: read where the options leave a setting unset. Listed here, beside machine
 * authentication's, so the typo check knows the variables and docs/outbox.md's table is written from the same rows.
 */
export const PLATFORM_OUTBOX_OPTIONS = {
  'connection.url': {
    env: 'PLATFORM_OUTBOX_REDIS_URL',
    kind: 'url',
    secret: true,
    rule: 'the Redis of the queue, `redis://` or `rediss://` (TLS), credentials allowed; the `PLATFORM_OUTBOX_REDIS_*` variables are read only when `connection` is not given',
  },
  'connection.username': {
    env: 'PLATFORM_OUTBOX_REDIS_USERNAME',
    kind: 'text',
    rule: "Redis ACL user; needs a password; overrides the URL's",
  },
  'connection.password': {
    env: 'PLATFORM_OUTBOX_REDIS_PASSWORD',
    kind: 'text',
    secret: true,
    rule: "Redis password (of `username`, else of the default user); overrides the URL's",
  },
  'connection.tls.caPath': {
    env: 'PLATFORM_OUTBOX_REDIS_TLS_CA_PATH',
    kind: 'path',
    rule: "PEM file of the CA(s) that signed Redis's certificate (a private CA); turns TLS on",
  },
  'connection.tls.certPath': {
    env: 'PLATFORM_OUTBOX_REDIS_TLS_CERT_PATH',
    kind: 'path',
    rule: 'PEM client certificate for mutual TLS, with `keyPath`; turns TLS on',
  },
  'connection.tls.keyPath': {
    env: 'PLATFORM_OUTBOX_REDIS_TLS_KEY_PATH',
    kind: 'path',
    rule: 'PEM private key of `certPath` (unencrypted)',
  },
  worker: {
    env: 'PLATFORM_OUTBOX_WORKER',
    kind: 'object',
    toggle: true,
    default: true,
    rule: '`false`: this process only enqueues (the web tier); `true` runs workers, as the `worker.*` rows say',
  },
  'worker.concurrency': {
    env: 'PLATFORM_OUTBOX_WORKER_CONCURRENCY',
    kind: 'number',
    min: 1,
    max: 1_000,
    default: 4,
    rule: 'jobs one process sends at once; a whole number',
  },
  'worker.lockDurationMs': {
    env: 'PLATFORM_OUTBOX_WORKER_LOCK_DURATION_MS',
    kind: 'number',
    min: 100,
    max: 3_600_000,
    default: 30_000,
    rule: "how long a worker's claim on a job lasts without renewal (renewed every half of it); a dead worker's job waits for it to run out",
  },
  'worker.stalledIntervalMs': {
    env: 'PLATFORM_OUTBOX_WORKER_STALLED_INTERVAL_MS',
    kind: 'number',
    min: 100,
    max: 3_600_000,
    default: 30_000,
    rule: "how often the queue is checked for jobs of dead workers; such a job is back within `max(lockDurationMs, 2 × stalledIntervalMs) + stalledIntervalMs` of the worker's death",
  },
  'worker.maxStalledCount': {
    env: 'PLATFORM_OUTBOX_WORKER_MAX_STALLED_COUNT',
    kind: 'number',
    min: 0,
    max: 1_000,
    rule: 'how many times a job may come back from a dead worker before it is dead-lettered; default `retry.attempts`',
  },
  'retry.attempts': {
    env: 'PLATFORM_OUTBOX_RETRY_ATTEMPTS',
    kind: 'number',
    min: 1,
    max: 1_000,
    default: 12,
    rule: 'attempts per message, the first included; then it is dead-lettered',
  },
  'retry.delayMs': {
    env: 'PLATFORM_OUTBOX_RETRY_DELAY_MS',
    kind: 'number',
    min: 1,
    max: 3_600_000,
    default: 1_000,
    rule: 'the first back-off; each next one doubles',
  },
  'retry.maxDelayMs': {
    env: 'PLATFORM_OUTBOX_RETRY_MAX_DELAY_MS',
    kind: 'number',
    min: 1,
    max: 86_400_000,
    default: 300_000,
    rule: 'the longest back-off, and the most a `Retry-After` is waited for; at least `delayMs`',
  },
} as const satisfies Record<string, OptionRow>;
