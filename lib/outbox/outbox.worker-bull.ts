import type { Job } from 'bullmq';
import { outboxJob } from './outbox.bull.js';
import type { BullMq } from './outbox.connection.js';
import { boundedReason, redisReason } from './outbox.reasons.js';
import type { OutboxJob } from './outbox.types.js';

/** Prefix of the failed reason of a refused job: the lists and the event of a final failure tell them apart. */
export const REFUSED = 'refused: ';
/** Prefix of the failed reason of a job BullMQ gave up on after its workers died mid-send too often. */
const STALLED = 'stalled: ';
/** BullMQ's own errors that steer a job rather than fail it: passed on as they are. */
const STEERING = new Set(['DelayedError', 'WaitingError', 'WaitingChildrenError', 'RateLimitError']);
/** node-redis's errors of a connection lost mid-command, and the system errors of one that cannot be made. */
const CONNECTION_LOST = new Set(['SocketClosedUnexpectedlyError', 'ClientOfflineError', 'ConnectionTimeoutError']);
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
/** How many times a final failure's state is read back, each once Redis answers again. */
const STATE_READS = 3;

/** An attempt that will be made again, after `delayMs`. */
export class RetryLater extends Error {
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
export interface WorkerRedis {
  /** Whether Redis answers now. */
  ready(): boolean;
  /** An error of BullMQ's commands or connections. */
  failed(error: unknown): void;
  /** Resolves once Redis answers (at once while it does). */
  answering(): Promise<void>;
}

/**
 * A failure reported as `retried`, or, once its state is read back as failed, as `failed` (refused) or
 * `dead-lettered`: a job whose last move Redis did not confirm is reported by nothing, and runs again.
 */
export async function reportFailure(
  job: Job,
  error: Error,
  listener: DeliveryListener,
  redis: WorkerRedis,
): Promise<void> {
  const reason = error.message;
  // The job's own limit, set by the process that enqueued it, which may be configured otherwise than this one.
  const final = error.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
  if (!final) {
    listener.retried(outboxJob(job), reason, error instanceof RetryLater ? error.delayMs : (job.delay ?? 0));
    return;
  }
  for (let read = 0; read < STATE_READS; read += 1) {
    try {
      if ((await job.getState()) !== 'failed') return;
      if (reason.startsWith(REFUSED)) listener.failed(outboxJob(job), reason);
      else listener.deadLettered(outboxJob(job), reason);
      return;
    } catch (stateError) {
      redis.failed(stateError);
      await redis.answering();
    }
  }
}

/**
 * The failed reason a job keeps names the cause: the outbox's own errors as they are, a stall limit as such, and
 * anything else BullMQ met on Redis as `redis: …` (such a job is reconciled before it is sent again).
 */
function outboxFailure(bull: BullMq, error: Error): Error {
  if (error instanceof RetryLater || STEERING.has(error.name) || error.message.startsWith(REFUSED)) return error;
  if (error.name === 'UnrecoverableError') {
    return new bull.UnrecoverableError(
      `${STALLED}its worker stopped mid-send more often than maxStalledCount allows (${boundedReason(error.message)})`,
    );
  }
  return new Error(redisReason(error));
}

function connectionLost(error: unknown, redis: WorkerRedis): boolean {
  const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
  return !redis.ready() || CONNECTION_LOST.has(String(name)) || CONNECTION_CODES.has(String(code));
}

/**
 * BullMQ's worker, with the outbox's failed reasons, and with a completion or a failure that Redis lost with its
 * connection recorded again once it answers. BullMQ waits out a lost connection only for the errors it knows as such
 * (ioredis's); node-redis's would fail the job instead, or, for a send the platform took, fail it to send it again.
 */
export function outboxWorker(bull: BullMq, redis: WorkerRedis): BullMq['Worker'] {
  const recorded = async (move: () => Promise<Job>): Promise<Job> => {
    try {
      return await move();
    } catch (error) {
      throw connectionLost(error, redis) ? new bull.ConnectionClosedError(redisReason(error), error) : error;
    }
  };
  class OutboxWorker extends bull.Worker {
    protected override handleCompleted(
      result: unknown,
      job: Job,
      token: string,
      fetchNextCallback?: () => boolean,
      span?: unknown,
    ): Promise<Job> {
      return recorded(() => super.handleCompleted(result, job, token, fetchNextCallback, span as never));
    }

    protected override handleFailed(
      error: Error,
      job: Job,
      token: string,
      fetchNextCallback?: () => boolean,
      span?: unknown,
    ): Promise<Job> {
      return recorded(() =>
        super.handleFailed(outboxFailure(bull, error), job, token, fetchNextCallback, span as never),
      );
    }
  }
  return OutboxWorker;
}
