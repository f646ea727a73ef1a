import type { ConnectionOptions, Job } from 'bullmq';
import type { BullMq, OutboxBullWorker } from './outbox.connection.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { checkStoredJob } from './outbox.message.js';
import { sendOnce, thrownVerdict, type AttemptVerdict, type SendFetch } from './outbox.delivery.js';
import type { OutboxBodyCodec, OutboxJob, OutboxReconcile, StoredMessage } from './outbox.types.js';

/** Prefixes of a job's failed reason: the dead-letter list and the event of a final failure tell them apart. */
export const REFUSED = 'refused: ';
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
  readonly reconcile?: OutboxReconcile;
  readonly bodyCodec?: OutboxBodyCodec;
}

/** What the worker reports; the service turns it into events and telemetry. */
export interface DeliveryListener {
  sent(job: OutboxJob, status: number, reconciled: boolean): void;
  retried(job: OutboxJob, reason: string, delayMs: number): void;
  failed(job: OutboxJob, reason: string): void;
  deadLettered(job: OutboxJob, reason: string): void;
}

/** An attempt that will be made again, after `delayMs`. */
class RetryLater extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

export function outboxJob(job: Job): OutboxJob {
  const data: unknown = job.data;
  // A job's data as Redis holds it, whoever wrote it: listed as it is, never sent unchecked.
  return {
    method: '',
    path: '',
    ...(typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as StoredMessage) : undefined),
    id: String(job.id),
    idempotencyKey: (data as Partial<StoredMessage> | undefined)?.idempotencyKey ?? String(job.id),
    attemptsMade: job.attemptsMade,
    enqueuedAt: job.timestamp,
  };
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
export function backoffMs(settings: DeliverySettings, attempt: number, retryAfterMs?: number): number {
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
): OutboxBullWorker {
  const processJob = async (job: Job): Promise<{ status: number; reconciled: boolean }> => {
    let checked: ReturnType<typeof checkStoredJob>;
    try {
      checked = checkStoredJob(job.data, String(job.id), settings.storedHeaders);
    } catch (error) {
      throw new bull.UnrecoverableError(`${REFUSED}${(error as Error).message}`);
    }
    const stored = checked.message;
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
          ? await sendOnce(fetch, message, key, settings.sendTimeoutMs, Date.now)
          : // A hook that failed leaves the question open: neither sent nor given up, and asked again next time.
            { kind: 'transient', reason: 'reconcile failed', ambiguous: true };
    } catch (error) {
      verdict = thrownVerdict(error);
    }
    if (verdict.kind === 'sent') return { status: verdict.status, reconciled: false };
    if (verdict.kind === 'refused') throw new bull.UnrecoverableError(`${REFUSED}${verdict.reason}`);
    const delayMs = backoffMs(settings, job.attemptsMade + 1, verdict.retryAfterMs);
    throw new RetryLater(`${verdict.ambiguous ? AMBIGUOUS : TRANSIENT}${verdict.reason}`, delayMs);
  };
  const worker = new bull.Worker(queueName, processJob, {
    connection,
    concurrency: settings.concurrency,
    lockDuration: settings.lockDurationMs,
    stalledInterval: settings.lockDurationMs,
    // A worker that dies mid-send is no reason to give up on the message: its next attempt reconciles first.
    maxStalledCount: settings.attempts,
    settings: {
      backoffStrategy: (_made, _type, error) => (error instanceof RetryLater ? error.delayMs : settings.delayMs),
    },
  });
  worker.on('completed', (job, result: { status: number; reconciled: boolean }) =>
    listener.sent(outboxJob(job), result.status, result.reconciled),
  );
  worker.on('failed', (job, error) => {
    if (!job) return;
    const reason = error.message;
    if (reason.startsWith(REFUSED)) listener.failed(outboxJob(job), reason);
    // The job's own limit, set by the process that enqueued it, which may be configured otherwise than this one.
    else if (job.attemptsMade < (job.opts.attempts ?? 1) && error instanceof RetryLater)
      listener.retried(outboxJob(job), reason, error.delayMs);
    else listener.deadLettered(outboxJob(job), reason);
  });
  // Redis out of reach: BullMQ reconnects by itself; the queue's depth and the health check show the outage.
  worker.on('error', () => undefined);
  return worker;
}
