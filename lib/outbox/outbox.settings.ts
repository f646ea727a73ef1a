import { Logger, type LoggerService } from '@nestjs/common';
import { PlatformAuthConfigError, defineRedisConnection, systemClock, type Clock } from '../index.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { HEADER_NAME, storedHeaderNames } from './outbox.message.js';
import type { OutboxBodyCodec, OutboxReconcile, OutboxWorkerOptions, PlatformOutboxOptions } from './outbox.types.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The outbox's own defaults, each written once: the settings below and the docs' table read them. */
const OUTBOX_DEFAULTS = {
  queueName: 'platform-outbox',
  idempotencyKeyHeader: 'Idempotency-Key',
  concurrency: 4,
  attempts: 12,
  delayMs: 1_000,
  maxDelayMs: 300_000,
  sendTimeoutMs: 30_000,
  enqueueTimeoutMs: 5_000,
  keepSentMs: 86_400_000,
} as const;

/** The prefix of the variables of the outbox's Redis, which mean what the store's `PLATFORM_TOKEN_STORE_*` mean. */
const REDIS_VARIABLES = 'PLATFORM_OUTBOX_REDIS';

/** The outbox's variables besides its Redis: what a team sets per environment, read where the options leave it unset. */
export const OUTBOX_VARIABLES = {
  worker: {
    env: 'PLATFORM_OUTBOX_WORKER',
    default: true,
    rule: '`false`: this process only enqueues (the web tier); `true` runs workers',
  },
  'worker.concurrency': {
    env: 'PLATFORM_OUTBOX_WORKER_CONCURRENCY',
    default: OUTBOX_DEFAULTS.concurrency,
    rule: "BullMQ's `concurrency`: jobs one process sends at once; a whole number from 1 to 1000",
  },
  'retry.attempts': {
    env: 'PLATFORM_OUTBOX_RETRY_ATTEMPTS',
    default: OUTBOX_DEFAULTS.attempts,
    rule: 'attempts per message, the first included, from 1 to 1000; then it is dead-lettered',
  },
  'retry.delayMs': {
    env: 'PLATFORM_OUTBOX_RETRY_DELAY_MS',
    default: OUTBOX_DEFAULTS.delayMs,
    rule: 'the first back-off, from 1 to 3600000; each next one doubles',
  },
  'retry.maxDelayMs': {
    env: 'PLATFORM_OUTBOX_RETRY_MAX_DELAY_MS',
    default: OUTBOX_DEFAULTS.maxDelayMs,
    rule: 'the longest back-off, and the most a `Retry-After` is waited for; from `delayMs` to 86400000',
  },
} as const;

/** Every variable the outbox reads: its own, and its Redis's (the store's connection variables under its prefix). */
export const OUTBOX_VARIABLE_NAMES: readonly string[] = [
  ...Object.values(OUTBOX_VARIABLES).map((row) => row.env),
  ...['URL', 'CLUSTER_NODES', 'SENTINEL_NODES', 'SENTINEL_MASTER', 'USERNAME', 'PASSWORD']
    .concat(['TLS_CA_PATH', 'TLS_CERT_PATH', 'TLS_KEY_PATH'])
    .map((name) => `${REDIS_VARIABLES}_${name}`),
];

/** How one message is sent and retried. */
export interface DeliverySettings {
  readonly attempts: number;
  readonly delayMs: number;
  readonly maxDelayMs: number;
  readonly sendTimeoutMs: number;
  readonly keyHeader: string;
  /** The header names a job may carry (`storedHeaders`): a job is checked again before each send. */
  readonly storedHeaders: ReadonlySet<string>;
  readonly reconcile?: OutboxReconcile;
  readonly bodyCodec?: OutboxBodyCodec;
  readonly clock: Clock;
}

/** The options resolved: defaults taken, the environment read, every number checked. */
export interface OutboxSettings {
  readonly redis: NonNullable<ReturnType<typeof defineRedisConnection>>;
  /** BullMQ's worker options with the outbox's defaults; absent when this process only enqueues. */
  readonly worker?: OutboxWorkerOptions;
  readonly queueName: string;
  readonly storedHeaders: ReadonlySet<string>;
  readonly attempts: number;
  readonly enqueueTimeoutMs: number;
  readonly keepSentMs: number;
  readonly bodyCodec?: OutboxBodyCodec;
  readonly clock: Clock;
  readonly logger: LoggerService;
  readonly delivery: DeliverySettings;
}

const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** The checks of one resolution: each value from code or its variable, each problem named by option (and variable). */
class Checks {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  /** A whole number in bounds, from code, else from the option's variable, else the default. */
  integer(option: string, code: unknown, fallback: number, min: number, max: number): number {
    const variable = (OUTBOX_VARIABLES as Record<string, { env: string }>)[option]?.env;
    const text = code === undefined && variable !== undefined ? this.env[variable]?.trim() || undefined : undefined;
    const value = text === undefined ? code : /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
    if (value === undefined) return fallback;
    if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
    const got = text !== undefined && /^[\x21-\x7e]{1,64}$/.test(text) ? `, got '${text}'` : '';
    this.problems.push(
      `${text === undefined ? option : `${option} (${variable})`} must be a whole number from ${min} to ${max}${got}`,
    );
    return fallback;
  }

  /** `worker`: the code's, else `PLATFORM_OUTBOX_WORKER` (`true`/`false`), else on. */
  workerSwitch(code: PlatformOutboxOptions['worker']): boolean | OutboxWorkerOptions {
    if (code !== undefined) {
      if (typeof code === 'boolean' || (typeof code === 'object' && code !== null)) return code;
      this.problems.push("worker must be true, false or BullMQ's worker options");
      return true;
    }
    const text = this.env[OUTBOX_VARIABLES.worker.env]?.trim();
    if (!text) return true;
    if (/^(true|1|yes)$/i.test(text)) return true;
    if (/^(false|0|no)$/i.test(text)) return false;
    const got = /^[\x21-\x7e]{1,64}$/.test(text) ? `, got '${text}'` : '';
    this.problems.push(`worker (${OUTBOX_VARIABLES.worker.env}) must be true or false${got}`);
    return true;
  }
}

/** Every problem at once, each naming its option (and its variable when the value came from one). */
export function resolveOutboxSettings(options: PlatformOutboxOptions = {}, env: Env = process.env): OutboxSettings {
  const checks = new Checks(env);
  const { problems } = checks;
  const redis = redisOf(options, env, problems);
  const worker = checks.workerSwitch(options.worker);
  const queueName = options.queueName ?? OUTBOX_DEFAULTS.queueName;
  if (typeof queueName !== 'string' || !QUEUE_NAME.test(queueName))
    problems.push('queueName must be 1 to 100 letters, digits, "_", "." or "-"');
  const keyHeader = options.idempotencyKeyHeader ?? OUTBOX_DEFAULTS.idempotencyKeyHeader;
  if (typeof keyHeader !== 'string' || !HEADER_NAME.test(keyHeader) || /^authorization$/i.test(keyHeader))
    problems.push('idempotencyKeyHeader must be a header name other than Authorization');
  if (options.reconcile !== undefined && typeof options.reconcile !== 'function')
    problems.push('reconcile must be a function');
  const codec = options.bodyCodec;
  if (codec !== undefined && (typeof codec?.encode !== 'function' || typeof codec.decode !== 'function'))
    problems.push('bodyCodec must have encode(body) and decode(stored) functions');
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function' || typeof clock.sleep !== 'function')
    problems.push('clock must have now() and sleep(ms) functions');
  let storedHeaders: ReadonlySet<string> = new Set();
  try {
    storedHeaders = storedHeaderNames(options.storedHeaders);
  } catch (error) {
    problems.push((error as Error).message.replace(/^PlatformOutboxModule: /, ''));
  }
  const retry = options.retry ?? {};
  const attempts = checks.integer('retry.attempts', retry.attempts, OUTBOX_DEFAULTS.attempts, 1, 1_000);
  const delayMs = checks.integer('retry.delayMs', retry.delayMs, OUTBOX_DEFAULTS.delayMs, 1, 3_600_000);
  const maxDelayMs = checks.integer(
    'retry.maxDelayMs',
    retry.maxDelayMs,
    OUTBOX_DEFAULTS.maxDelayMs,
    delayMs,
    86_400_000,
  );
  const given = typeof worker === 'object' ? worker : {};
  const concurrency =
    worker === false
      ? OUTBOX_DEFAULTS.concurrency
      : checks.integer('worker.concurrency', given.concurrency, OUTBOX_DEFAULTS.concurrency, 1, 1_000);
  const sendTimeoutMs = checks.integer(
    'sendTimeoutMs',
    options.sendTimeoutMs,
    OUTBOX_DEFAULTS.sendTimeoutMs,
    1,
    600_000,
  );
  const enqueueTimeoutMs = checks.integer(
    'enqueueTimeoutMs',
    options.enqueueTimeoutMs,
    OUTBOX_DEFAULTS.enqueueTimeoutMs,
    1,
    600_000,
  );
  const keepSentMs = checks.integer(
    'keepSentMs',
    options.keepSentMs,
    OUTBOX_DEFAULTS.keepSentMs,
    1_000,
    365 * 86_400_000,
  );
  if (problems.length > 0) throw new PlatformOutboxError('config', `PlatformOutboxModule: ${problems.join('; ')}`);
  return {
    redis: redis!,
    // A worker that dies mid-send is no reason to give up on the message: its next attempt reconciles first.
    ...(worker !== false && { worker: { maxStalledCount: attempts, ...given, concurrency } }),
    queueName,
    storedHeaders,
    attempts,
    enqueueTimeoutMs,
    keepSentMs,
    ...(codec && { bodyCodec: codec }),
    clock,
    logger: options.logger ?? new Logger('PlatformOutbox'),
    delivery: {
      attempts,
      delayMs,
      maxDelayMs,
      sendTimeoutMs,
      keyHeader,
      storedHeaders,
      ...(options.reconcile && { reconcile: options.reconcile }),
      ...(codec && { bodyCodec: codec }),
      clock,
    },
  };
}

/** The queue's Redis, as the store's connection is configured; its problems join the others. */
function redisOf(options: PlatformOutboxOptions, env: Env, problems: string[]): OutboxSettings['redis'] | undefined {
  try {
    const redis = defineRedisConnection({
      connection: options.connection,
      option: 'connection',
      variablePrefix: REDIS_VARIABLES,
      env,
    });
    if (!redis) {
      problems.push(
        `no Redis connection: give connection ({ url }, { clusterNodes }, { sentinel } or { client }) or set ${REDIS_VARIABLES}_URL`,
      );
    }
    return redis;
  } catch (error) {
    if (!(error instanceof PlatformAuthConfigError)) throw error;
    problems.push(...error.problems.map((problem) => `${problem.setting} ${problem.message}`));
    return undefined;
  }
}
