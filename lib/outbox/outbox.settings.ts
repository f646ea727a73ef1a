import { systemClock, type Clock } from '../platform-auth.clock.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { HEADER_NAME, storedHeaderNames } from './outbox.message.js';
import type { OutboxBodyCodec, OutboxConnection, PlatformOutboxOptions } from './outbox.types.js';
import type { DeliverySettings } from './outbox.worker.js';

/** The options resolved: defaults taken, every number checked. */
export interface OutboxSettings {
  readonly connection?: OutboxConnection;
  readonly worker: boolean;
  readonly queueName: string;
  readonly storedHeaders: ReadonlySet<string>;
  readonly attempts: number;
  readonly enqueueTimeoutMs: number;
  readonly keepSentMs: number;
  readonly bodyCodec?: OutboxBodyCodec;
  readonly clock: Clock;
  readonly delivery: DeliverySettings;
}

const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** Every problem at once, each naming its option. */
export function resolveOutboxSettings(options: PlatformOutboxOptions = {}): OutboxSettings {
  const problems: string[] = [];
  const integer = (option: string, value: number | undefined, fallback: number, min: number, max: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${option} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  const worker = options.worker ?? true;
  if (typeof worker !== 'boolean' && (typeof worker !== 'object' || worker === null))
    problems.push('worker must be true, false or { concurrency, lockDurationMs, stalledIntervalMs, maxStalledCount }');
  const workerOptions = typeof worker === 'object' && worker !== null ? worker : {};
  const queueName = options.queueName ?? 'platform-outbox';
  if (typeof queueName !== 'string' || !QUEUE_NAME.test(queueName))
    problems.push('queueName must be 1 to 100 letters, digits, "_", "." or "-"');
  const keyHeader = options.idempotencyKeyHeader ?? 'Idempotency-Key';
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
  const attempts = integer('retry.attempts', retry.attempts, 12, 1, 1_000);
  const delayMs = integer('retry.delayMs', retry.delayMs, 1_000, 1, 3_600_000);
  const maxDelayMs = integer('retry.maxDelayMs', retry.maxDelayMs, 300_000, delayMs, 86_400_000);
  const delivery: DeliverySettings = {
    attempts,
    delayMs,
    maxDelayMs,
    sendTimeoutMs: integer('sendTimeoutMs', options.sendTimeoutMs, 30_000, 1, 600_000),
    keyHeader,
    storedHeaders,
    concurrency: integer('worker.concurrency', workerOptions.concurrency, 4, 1, 1_000),
    lockDurationMs: integer('worker.lockDurationMs', workerOptions.lockDurationMs, 30_000, 100, 3_600_000),
    stalledIntervalMs: integer('worker.stalledIntervalMs', workerOptions.stalledIntervalMs, 30_000, 100, 3_600_000),
    // A worker that dies mid-send is no reason to give up on the message: its next attempt reconciles first.
    maxStalledCount: integer('worker.maxStalledCount', workerOptions.maxStalledCount, attempts, 0, 1_000),
    ...(options.reconcile && { reconcile: options.reconcile }),
    ...(codec && { bodyCodec: codec }),
    clock,
  };
  const settings: OutboxSettings = {
    ...(options.connection !== undefined && { connection: options.connection }),
    worker: worker !== false,
    queueName,
    storedHeaders,
    attempts,
    enqueueTimeoutMs: integer('enqueueTimeoutMs', options.enqueueTimeoutMs, 5_000, 1, 600_000),
    keepSentMs: integer('keepSentMs', options.keepSentMs, 86_400_000, 1_000, 365 * 86_400_000),
    ...(codec && { bodyCodec: codec }),
    clock,
    delivery,
  };
  if (problems.length > 0) {
    throw new PlatformOutboxError('config', `PlatformOutboxModule: ${problems.join('; ')}`);
  }
  return settings;
}
