import type { ConnectionOptions, Job, Queue, Worker } from 'bullmq';
import type { BullMq } from './outbox.connection.js';
import { sendOnce, thrownVerdict, type AttemptVerdict, type SendFetch } from './outbox.delivery.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { ownerOf } from './outbox.rounds.js';
import { OwnerTurns } from './outbox.turns.js';
import { markUnreadable, outboxJob } from './outbox.jobs.js';
import { checkStoredJob } from './outbox.message.js';
import { AMBIGUOUS, REFUSED, TRANSIENT, failureReason } from './outbox.reasons.js';
import type { DeliverySettings } from './outbox.settings.js';
import type { OutboxBodyCodec, OutboxJob, OutboxWorkerOptions, StoredMessage } from './outbox.types.js';

/** The longest wait before a completion or failure lost with Redis is recorded again. */
const RECORD_RETRY_MS = 1_000;
/** How many sends one worker process remembers whose completion Redis may not have recorded. */
const REMEMBERED = 1_000;
/** How many times a final failure's state is read back, each once Redis answers again. */
const STATE_READS = 3;

/**
 * The sends this process had the platform take (a 2xx) until Redis records the job as sent. When Redis is lost
 * between the two, BullMQ runs the job again (after a failed move, or once its lock ran out); this worker then ends it
 * as sent with the status it had, instead of sending it again. Another process that picks the job up does not know:
 * it asks `reconcile`, or sends again under the same key.
 */
class DeliveredSends {
  readonly #sent = new Map<string, number>();

  remember(id: string, status: number): void {
    this.#sent.delete(id);
    this.#sent.set(id, status);
    // The oldest first: a job whose completion another process recorded is never forgotten otherwise.
    if (this.#sent.size > REMEMBERED) this.#sent.delete(this.#sent.keys().next().value as string);
  }

  status(id: string): number | undefined {
    return this.#sent.get(id);
  }

  recorded(id: string): void {
    this.#sent.delete(id);
  }
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

/** What the worker reports; the service turns it into events and telemetry. */
export interface DeliveryListener {
  sent(job: OutboxJob, status: number, reconciled: boolean): void;
  retried(job: OutboxJob, reason: string, delayMs: number): void;
  failed(job: OutboxJob, reason: string): void;
  deadLettered(job: OutboxJob, reason: string): void;
}

/** What the worker tells of Redis, and asks of it. */
interface WorkerRedis {
  /** An error of BullMQ's commands or connections. */
  failed(error: unknown): void;
  /** Resolves once Redis answers (at once while it does). */
  answering(): Promise<void>;
}

/** How a message is sent: its integration's or tenant's client, and the rate limit that client keeps, if any. */
export interface Sender {
  readonly fetch: SendFetch;
  /** Requests per second of the integration's `rateLimit`. */
  readonly perSecond?: number;
}

/** What the worker is made of, besides BullMQ: the queue it works, its options, and where messages go. */
interface WorkerParts {
  readonly queue: Queue;
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  readonly options: OutboxWorkerOptions;
  readonly delivery: DeliverySettings;
  readonly senderOf: (message: StoredMessage) => Promise<Sender>;
  readonly listener: DeliveryListener;
  readonly redis: WorkerRedis;
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
 * A failure reported as `retried`, or, once its state is read back as failed, as `failed` (refused) or
 * `dead-lettered`: a job whose last move Redis did not confirm is reported by nothing, and runs again.
 */
async function reportFailure(job: Job, error: Error, listener: DeliveryListener, redis: WorkerRedis): Promise<void> {
  const reason = failureReason(error.message);
  const reported = outboxJob(String(job.id), job.data, job.attemptsMade, job.timestamp);
  // The job's own limit, set by the process that enqueued it, which may be configured otherwise than this one.
  const final = error.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
  if (!final) return listener.retried(reported, reason, error instanceof RetryLater ? error.delayMs : (job.delay ?? 0));
  for (let read = 0; read < STATE_READS; read += 1) {
    try {
      if ((await job.getState()) !== 'failed') return;
      if (reason.startsWith(REFUSED)) listener.failed(reported, reason);
      else listener.deadLettered(reported, reason);
      return;
    } catch (stateError) {
      redis.failed(stateError);
      await redis.answering();
    }
  }
}

/**
 * The BullMQ worker of one process: each job sent once per attempt with its key through the integration's or
 * tenant's client; a 2xx ends it, a refusal fails it for good, anything transient goes back to the queue with a
 * back-off until the attempts run out (then it is dead-lettered). A job whose owner is held, or rate-limited with a
 * send already waiting for its turn, goes back to wait in BullMQ's delayed set without a send or a spent attempt.
 */
export function startWorker(bull: BullMq, parts: WorkerParts): Worker {
  const { delivery: settings, listener, redis } = parts;
  const delivered = new DeliveredSends();
  const turns = new OwnerTurns(settings.clock);
  /** Back to BullMQ's delayed set for `waitMs`, the attempt not counted: nothing was sent. */
  const later = async (job: Job, token: string | undefined, waitMs: number): Promise<never> => {
    await job.moveToDelayed((job.processedOn ?? job.timestamp) + waitMs, token);
    throw new bull.DelayedError();
  };
  const attempt = async (job: Job, message: StoredMessage, key: string, sender: Sender): Promise<AttemptVerdict> => {
    try {
      const answer =
        settings.reconcile && mayHaveReached(job)
          ? await settings
              .reconcile(outboxJob(String(job.id), job.data, job.attemptsMade, job.timestamp))
              .catch(() => undefined)
          : 'send';
      if (answer === 'delivered') return { kind: 'sent', status: 0 };
      // A hook that failed leaves the question open: neither sent nor given up, and asked again next time.
      if (answer !== 'send') return { kind: 'transient', reason: 'reconcile failed', ambiguous: true };
      const header = { header: settings.keyHeader, value: key };
      return await sendOnce(sender.fetch, opened(message, settings.bodyCodec), header, settings.sendTimeoutMs, () =>
        settings.clock.now(),
      );
    } catch (error) {
      return thrownVerdict(error);
    }
  };
  const processJob = async (job: Job, token?: string): Promise<{ status: number; reconciled: boolean }> => {
    const id = String(job.id);
    let checked: ReturnType<typeof checkStoredJob>;
    try {
      checked = checkStoredJob(job.data, id, settings.storedHeaders);
    } catch (error) {
      throw new bull.UnrecoverableError(`${REFUSED}${(error as Error).message}`);
    }
    const known = delivered.status(id);
    if (known !== undefined) return { status: known, reconciled: true };
    const owner = ownerOf(id);
    const sender = await parts.senderOf(checked.message).catch((error: unknown) => thrownVerdict(error));
    let verdict: AttemptVerdict;
    if ('fetch' in sender) {
      const wait = turns.admit(owner, sender.perSecond);
      if (wait > 0) return later(job, token, wait);
      try {
        verdict = await attempt(job, checked.message, checked.key, sender);
      } finally {
        turns.done(owner);
      }
    } else {
      verdict = sender;
    }
    switch (verdict.kind) {
      case 'sent':
        delivered.remember(id, verdict.status);
        return { status: verdict.status, reconciled: verdict.status === 0 };
      case 'refused':
        throw new bull.UnrecoverableError(`${REFUSED}${verdict.reason}`);
      case 'held':
        turns.hold(owner, settings.clock.now() + verdict.waitMs);
        return later(job, token, verdict.waitMs);
      case 'transient': {
        const { retryAfterMs, ambiguous, reason } = verdict;
        if (retryAfterMs !== undefined)
          turns.hold(owner, settings.clock.now() + Math.min(retryAfterMs, settings.maxDelayMs));
        const delayMs = backoffMs(settings, job.attemptsMade + 1, retryAfterMs);
        throw new RetryLater(`${ambiguous ? AMBIGUOUS : TRANSIENT}${reason}`, delayMs);
      }
    }
  };
  const { options } = parts;
  const worker = new bull.Worker(parts.queue.name, processJob, {
    // How soon a completion or a failure lost with the connection is recorded again: before the job's lock runs out.
    runRetryDelay: Math.min(RECORD_RETRY_MS, (options.lockDuration ?? Number.POSITIVE_INFINITY) / 4),
    ...options,
    connection: parts.connection,
    prefix: parts.prefix,
    settings: {
      backoffStrategy: (_made, _type, error) => (error instanceof RetryLater ? error.delayMs : settings.delayMs),
    },
  });
  worker.on('completed', (job, result: { status: number; reconciled: boolean }) => {
    delivered.recorded(String(job.id));
    listener.sent(
      outboxJob(String(job.id), job.data, job.attemptsMade, job.timestamp),
      result.status,
      result.reconciled,
    );
  });
  // BullMQ emits it once Redis has the job's move: back in the queue with attempts left, else in the failed set.
  worker.on('failed', (job, error) => {
    if (job) void reportFailure(job, error, listener, redis);
  });
  worker.on('error', (error) => {
    // A job whose data is not JSON, which BullMQ cannot read: the worker's check refuses it once it reads.
    if (error instanceof SyntaxError) void markUnreadable(bull, parts.queue).catch(() => undefined);
    // Redis out of reach: BullMQ reconnects by itself; the outbox logs the outage once and `status()` names it.
    else redis.failed(error);
  });
  return worker;
}
