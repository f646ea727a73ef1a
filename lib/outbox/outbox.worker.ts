import type { ConnectionOptions, Job } from 'bullmq';
import type { Clock } from '../platform-auth.clock.js';
import { outboxJob } from './outbox.bull.js';
import type { BullMq, OutboxBullWorker } from './outbox.connection.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { checkStoredJob } from './outbox.message.js';
import { sendOnce, thrownVerdict, type AttemptVerdict, type SendFetch } from './outbox.delivery.js';
import { DeliveredSends } from './outbox.delivered.js';
import {
  REFUSED,
  RetryLater,
  outboxWorker,
  reportFailure,
  type DeliveryListener,
  type WorkerRedis,
} from './outbox.worker-bull.js';
import type { OutboxBodyCodec, OutboxReconcile, StoredMessage } from './outbox.types.js';

export { REFUSED, outboxJob, type DeliveryListener };

/** The longest wait before a completion or failure lost with Redis is recorded again. */
const RECORD_RETRY_MS = 1_000;

/** Prefixes of a job's failed reason: the dead-letter list and the event of a final failure tell them apart. */
const AMBIGUOUS = 'ambiguous: ';
const TRANSIENT = 'transient: ';

export interface DeliverySettings {
  readonly attempts: number;
  readonly delayMs: number;
  readonly maxDelayMs: number;
  readonly sendTimeoutMs: number;
  readonly keyHeader: string;
  /** The header names a job may carry (`storedHeaders`): a job is checked again before each send. */
  readonly storedHeaders: ReadonlySet<string>;
  readonly concurrency: number;
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly maxStalledCount: number;
  readonly reconcile?: OutboxReconcile;
  readonly bodyCodec?: OutboxBodyCodec;
  readonly clock: Clock;
}

/**
 * A previous attempt of `job` may have reached the platform: it ended ambiguous, or it started and never ended (its
 * worker died, so BullMQ found it stalled, or gave up on it with a reason of its own), or it did so before a
 * `retry(id)` that cleared these marks.
 */
export function mayHaveReached(job: Job): boolean {
  const reason = job.failedReason;
  return (
    (job.data as StoredMessage).mayHaveReached === true ||
    job.stalledCounter > 0 ||
    job.attemptsStarted > job.attemptsMade + 1 ||
    (reason !== undefined && reason !== '' && !reason.startsWith(REFUSED) && !reason.startsWith(TRANSIENT))
  );
}

/** The message as it is sent: a sealed body decoded (a body that cannot be is the worker's configuration problem). */
function opened(message: StoredMessage, codec: OutboxBodyCodec | undefined): StoredMessage {
  if (!message.sealed) return message;
  if (!codec) throw new PlatformOutboxError('config', 'the message body is sealed and this worker has no bodyCodec');
  const { sealed: _sealed, ...rest } = message;
  try {
    return { ...rest, body: codec.decode(String(message.body)) };
  } catch {
    // The codec's own error may quote what it could not read: only its failure is kept.
    throw new PlatformOutboxError('config', 'bodyCodec.decode failed on the stored body (another key?)');
  }
}

/** Exponential back-off from `delayMs`, at least `Retry-After`, at most `maxDelayMs`; jitter spreads a fleet's re-sends. */
function backoffMs(settings: DeliverySettings, attempt: number, retryAfterMs?: number): number {
  const exponential = settings.delayMs * 2 ** Math.max(0, attempt - 1) * (0.8 + Math.random() * 0.4);
  return Math.round(Math.min(settings.maxDelayMs, Math.max(exponential, retryAfterMs ?? 0)));
}

/**
 * The BullMQ worker of one process: each job sent once per attempt with its key through the integration's or
 * tenant's client; a 2xx ends it, a refusal fails it for good, anything transient goes back to the queue with a
 * back-off until the attempts run out (then it is dead-lettered).
 */
export function startWorker(
  bull: BullMq,
  queueName: string,
  connection: ConnectionOptions,
  settings: DeliverySettings,
  resolveFetch: (message: StoredMessage) => Promise<SendFetch>,
  listener: DeliveryListener,
  redis: WorkerRedis,
): OutboxBullWorker {
  const delivered = new DeliveredSends();
  const processJob = async (job: Job): Promise<{ status: number; reconciled: boolean }> => {
    let checked: ReturnType<typeof checkStoredJob>;
    try {
      checked = checkStoredJob(job.data, String(job.id), settings.storedHeaders);
    } catch (error) {
      throw new bull.UnrecoverableError(`${REFUSED}${(error as Error).message}`);
    }
    const stored = checked.message;
    const known = delivered.status(String(job.id));
    if (known !== undefined) return { status: known, reconciled: true };
    let verdict: AttemptVerdict;
    try {
      const message = opened(stored, settings.bodyCodec);
      const fetch = await resolveFetch(stored);
      const answer =
        settings.reconcile && mayHaveReached(job)
          ? await settings.reconcile(outboxJob(job)).catch(() => undefined)
          : 'send';
      if (answer === 'delivered') return { status: 0, reconciled: true };
      const key = { header: settings.keyHeader, value: checked.key };
      verdict =
        answer === 'send'
          ? await sendOnce(fetch, message, key, settings.sendTimeoutMs, () => settings.clock.now())
          : // A hook that failed leaves the question open: neither sent nor given up, and asked again next time.
            { kind: 'transient', reason: 'reconcile failed', ambiguous: true };
    } catch (error) {
      verdict = thrownVerdict(error);
    }
    if (verdict.kind === 'sent') {
      delivered.remember(String(job.id), verdict.status);
      return { status: verdict.status, reconciled: false };
    }
    if (verdict.kind === 'refused') throw new bull.UnrecoverableError(`${REFUSED}${verdict.reason}`);
    const delayMs = backoffMs(settings, job.attemptsMade + 1, verdict.retryAfterMs);
    throw new RetryLater(`${verdict.ambiguous ? AMBIGUOUS : TRANSIENT}${verdict.reason}`, delayMs);
  };
  const OutboxWorker = outboxWorker(bull, redis);
  const worker = new OutboxWorker(queueName, processJob, {
    connection,
    concurrency: settings.concurrency,
    lockDuration: settings.lockDurationMs,
    stalledInterval: settings.stalledIntervalMs,
    maxStalledCount: settings.maxStalledCount,
    // How soon a completion or a failure lost with the connection is recorded again: before the job's lock runs out.
    runRetryDelay: Math.min(RECORD_RETRY_MS, settings.lockDurationMs / 4),
    settings: {
      backoffStrategy: (_made, _type, error) => (error instanceof RetryLater ? error.delayMs : settings.delayMs),
    },
  });
  worker.on('completed', (job, result: { status: number; reconciled: boolean }) => {
    delivered.recorded(String(job.id));
    listener.sent(outboxJob(job), result.status, result.reconciled);
  });
  // BullMQ emits it once Redis has the job's move: back in the queue with attempts left, else in the failed set.
  worker.on('failed', (job, error) => {
    if (job) void reportFailure(job, error, listener, redis);
  });
  // Redis out of reach: BullMQ reconnects by itself; the outbox logs the outage once and `status()` names it.
  worker.on('error', (error) => redis.failed(error));
  return worker;
}
