import { EventEmitter } from 'node:events';
import type {
  BeforeApplicationShutdown,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import type { ConnectionOptions, Queue, Worker } from 'bullmq';
import { PlatformAuthConfigError, type Clock } from '../index.js';
import { RedisAvailability, type RedisOutage } from './outbox.availability.js';
import { bullMqConnection, loadBullMq, queuePrefix, type BullMq } from './outbox.connection.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { ownerOf, roundOf, type ScriptClient } from './outbox.fairness.js';
import { assertSameRequest } from './outbox.identity.js';
import { RefusalTally, failedJobs, oldestEnqueuedAt } from './outbox.jobs.js';
import { checkMessage, checkSealedSize, storedData } from './outbox.message.js';
import { REFUSED } from './outbox.reasons.js';
import type { OutboxSettings } from './outbox.settings.js';
import { OutboxTelemetry, type OutboxTelemetryEvent } from './outbox.telemetry.js';
import type {
  OutboxBodyCodec,
  OutboxEvents,
  OutboxFailedJob,
  OutboxMessage,
  OutboxStatus,
  StoredMessage,
} from './outbox.types.js';
import { mayHaveReached, startWorker, type DeliveryListener, type Sender } from './outbox.worker.js';

/** How many failed jobs `deadLetters()` and `failures()` read at most. */
const FAILED_PAGE = 10_000;
/** How many jobs of each state `status()` looks at for the oldest. */
const OLDEST_LOOK = 10;
/** How often an `enqueue` looks again for the job of another request that claimed its id. */
const CLAIM_WAIT_MS = 10;

/** What the outbox holds once it is started: BullMQ, its connection to Redis, the queue and the refusal tally. */
interface Started {
  readonly bull: BullMq;
  readonly redis: { readonly client: object; close(): void };
  readonly connection: ConnectionOptions;
  readonly queue: Queue;
  readonly tally: RefusalTally;
}

/**
 * `operation`, or the error `onTimeout` makes once `ms` have passed on `clock` (its `schedule`, else its `sleep`).
 * The timeout is given one turn of the event loop's I/O first: after a stall, Node runs expired timers before it
 * reads sockets, so an answer that is already waiting would otherwise look like one that never came.
 */
function within<T>(operation: Promise<T>, ms: number, clock: Clock, onTimeout: () => Error): Promise<T> {
  let cancel = (): void => undefined;
  const timeout = new Promise<never>((_, reject) => {
    const fire = (): void => void setImmediate(() => reject(onTimeout())).unref();
    if (clock.schedule) {
      cancel = clock.schedule(ms, fire);
    } else {
      const stop = new AbortController();
      cancel = () => stop.abort();
      clock.sleep(ms, stop.signal).then(fire, () => undefined);
    }
  });
  return Promise.race([operation, timeout]).finally(cancel);
}

/**
 * The outbox: `enqueue` stores a message in Redis (BullMQ) and returns its id; workers, in this process or in worker
 * processes, send it with the integration's or tenant's token and its idempotency key until the platform takes it,
 * each integration and tenant in turn. Inject it from `PlatformOutboxModule`.
 */
export class PlatformOutbox
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  readonly #settings: OutboxSettings;
  readonly #senderOf: (message: StoredMessage) => Promise<Sender>;
  readonly #events = new EventEmitter();
  readonly #telemetry: OutboxTelemetry;
  readonly #availability: RedisAvailability;
  #started?: Started;
  #worker?: Worker;

  /** @internal The module builds it; apps inject it. */
  constructor(settings: OutboxSettings, senderOf: (message: StoredMessage) => Promise<Sender>) {
    this.#settings = settings;
    this.#senderOf = senderOf;
    this.#telemetry = new OutboxTelemetry(settings.queueName);
    this.#availability = new RedisAvailability(settings.queueName, settings.logger, settings.clock);
  }

  on<E extends keyof OutboxEvents>(event: E, listener: (...args: OutboxEvents[E]) => void): this {
    this.#events.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof OutboxEvents>(event: E, listener: (...args: OutboxEvents[E]) => void): this {
    this.#events.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** @internal */
  async onModuleInit(): Promise<void> {
    const bull = await loadBullMq();
    const redis = await this.#settings.redis.open().catch((error: unknown) => {
      const why = error instanceof PlatformAuthConfigError ? error.problems.map((p) => p.message).join('; ') : '';
      throw new PlatformOutboxError('config', `PlatformOutboxModule: ${why || 'cannot make its Redis client'}`, {
        cause: error,
      });
    });
    const connection = bullMqConnection(bull, redis.client);
    this.#availability.watch(connection);
    const { queueName } = this.#settings;
    const queue = new bull.Queue(queueName, { connection, prefix: queuePrefix(queueName) });
    queue.on('error', (error) => this.redisFailed(error));
    this.#started = { bull, redis, connection, queue, tally: new RefusalTally(connection, queue) };
    await this.#telemetry.loaded();
  }

  /** @internal Workers start once every integration of the application is up. */
  onApplicationBootstrap(): void {
    const { worker, queueName, delivery } = this.#settings;
    if (!worker) return;
    const { bull, connection, queue } = this.started();
    this.#worker = startWorker(bull, {
      queue,
      connection,
      prefix: queuePrefix(queueName),
      options: worker,
      delivery,
      senderOf: this.#senderOf,
      listener: this.listener(),
      redis: { failed: (error) => this.redisFailed(error), answering: () => this.#availability.answering() },
    });
  }

  /**
   * @internal The workers finish the sends in flight while the integrations' clients still work. Without Redis they
   * stop at once: no send could be acknowledged, and BullMQ gives the jobs to another worker once their locks expire.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.#worker?.close(!this.ready());
  }

  /** @internal */
  async onApplicationShutdown(): Promise<void> {
    await this.#started?.queue.close();
    this.#availability.close();
    this.#started?.redis.close();
  }

  /**
   * Stores `message` durably and returns its id (its integration or tenant, and its idempotency key). The same
   * request again under the same key adds nothing and returns the same id, so a caller unsure whether an enqueue went
   * through calls it again; another request under a key its integration or tenant already used is refused
   * (`PlatformOutboxKeyConflictError`). Every other rejection is a `PlatformOutboxError` too: `invalid_message`, or
   * `unavailable` within `enqueueTimeoutMs` when Redis did not take it (the driver's error as `cause`).
   */
  async enqueue(message: OutboxMessage): Promise<string> {
    const { id, key, stored: checked, json: checkedJson } = checkMessage(message, this.#settings.storedHeaders);
    const { attempts, keepSentMs, bodyCodec, enqueueTimeoutMs, clock } = this.#settings;
    const stored =
      bodyCodec && checked.body !== undefined
        ? { ...checked, body: await sealed(bodyCodec, checked.body), sealed: true as const }
        : checked;
    const json = stored === checked ? checkedJson : checkSealedSize(stored);
    const { connection, queue } = this.started();
    // One bound for the commands: `enqueueTimeoutMs` is how long `enqueue` waits for Redis, not each command.
    const held = await this.bounded(async (live) => {
      for (; live();) {
        const found = await roundOf(
          connection as unknown as ScriptClient,
          queue,
          { id, owner: ownerOf(id), json },
          enqueueTimeoutMs,
        );
        if ('held' in found) return found.held;
        if ('round' in found) {
          await queue.add('message', stored, {
            jobId: id,
            attempts,
            priority: found.round,
            backoff: { type: 'outbox' },
            removeOnComplete: { age: Math.ceil(keepSentMs / 1000) },
            removeOnFail: false,
          });
          // The id is this request's, claimed: BullMQ stored this data, or the same request's.
          return null;
        }
        // Another request under the id is being added: its job, once there, says whether it is this one.
        await clock.sleep(CLAIM_WAIT_MS);
      }
      throw this.unanswered();
    });
    // The JSON this call stored, to the byte, is this request's job; only other data is compared field by field.
    if (held !== null && held !== json) assertSameRequest(storedData(held), checked, { key, id }, bodyCodec);
    this.emit('queued', 'queued', targetOf(stored), { id });
    return id;
  }

  /** Jobs out of attempts after transient failures (or workers dying mid-send): list them, then `retry(id)`. */
  async deadLetters(): Promise<OutboxFailedJob[]> {
    return (await this.failedJobs()).filter((job) => !job.reason.startsWith(REFUSED));
  }

  /** Jobs the platform refused (a 4xx other than 401, 408 and 429), with the status and its error code. */
  async failures(): Promise<OutboxFailedJob[]> {
    return (await this.failedJobs()).filter((job) => job.reason.startsWith(REFUSED));
  }

  /** Puts a dead-lettered or failed job back in the queue with its attempts renewed, under the same key. */
  async retry(id: string): Promise<void> {
    const { queue, tally } = this.started();
    await this.bounded(async () => {
      const job = await queue.getJob(String(id));
      if (!job || (await job.getState()) !== 'failed') {
        throw new PlatformOutboxError('not_found', 'PlatformOutbox.retry: no failed or dead-lettered job with that id');
      }
      // BullMQ's retry clears the failed reason and the counts that tell an ambiguous last attempt: the job keeps it.
      if (mayHaveReached(job) && !(job.data as StoredMessage).mayHaveReached) {
        await job.updateData({ ...(job.data as StoredMessage), mayHaveReached: true });
      }
      await tally.remove(job.id!);
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    });
  }

  /**
   * The queue's counts. While Redis is known to be out of reach it rejects at once (`reason: 'unavailable'`), naming
   * since when and why, as the outbox's warning did.
   */
  async status(): Promise<OutboxStatus> {
    const { queue, tally } = this.started();
    const outage = this.#availability.outage;
    if (outage) throw new PlatformOutboxError('unavailable', `PlatformOutbox: Redis is ${outageText(outage)}`);
    const [counts, refusals, oldest] = await this.bounded(() =>
      Promise.all([
        queue.getJobCounts('wait', 'prioritized', 'delayed', 'active', 'completed', 'failed'),
        tally.count(),
        oldestEnqueuedAt(queue, OLDEST_LOOK),
      ]),
    );
    const failed = Math.min(counts.failed, refusals);
    const waiting = counts.wait + counts.prioritized;
    return {
      queueName: this.#settings.queueName,
      waiting,
      delayed: counts.delayed,
      active: counts.active,
      sent: counts.completed,
      failed,
      deadLettered: counts.failed - failed,
      depth: waiting + counts.delayed + counts.active,
      oldestAgeMs: Number.isFinite(oldest) ? Math.max(0, this.#settings.clock.now() - oldest) : 0,
      workers: this.#worker !== undefined,
    };
  }

  private started(): Started {
    if (!this.#started) throw new PlatformOutboxError('unavailable', 'PlatformOutbox: the outbox is not started');
    return this.#started;
  }

  /** Whether the outbox's Redis answers now (node-redis's `isReady`, a cluster's and a sentinel's alike). */
  private ready(): boolean {
    return (this.#started?.connection as { isReady?: unknown } | undefined)?.isReady === true;
  }

  private failedJobs(): Promise<OutboxFailedJob[]> {
    const { queue } = this.started();
    return this.bounded(() => failedJobs(queue, FAILED_PAGE));
  }

  /**
   * Redis out of reach is a `PlatformOutboxError` (`unavailable`) after `enqueueTimeoutMs`, not a caller waiting for
   * as long as the outage lasts, nor the driver's own error. The client keeps every command back while it reconnects
   * (it has no timer per command to drop one), so `operation` starts only once the client is ready within the bound:
   * a call that rejected sends nothing later, and no sequence of commands (`retry`'s) is left half done by one that
   * ran after the caller was told it did not. An `operation` that waits between its commands stops once `live()` is
   * false.
   */
  private async bounded<T>(operation: (live: () => boolean) => Promise<T>): Promise<T> {
    const { enqueueTimeoutMs, clock } = this.#settings;
    let waiting = true;
    const started = this.#availability
      .connected(() => this.ready())
      .then(() => {
        if (!waiting) throw this.unanswered();
        return operation(() => waiting);
      });
    try {
      return await within(started, enqueueTimeoutMs, clock, () => this.unanswered());
    } catch (error) {
      if (error instanceof PlatformOutboxError) throw error;
      const why = this.#availability.outage ? `; ${outageText(this.#availability.outage)}` : '';
      throw new PlatformOutboxError('unavailable', `PlatformOutbox: Redis did not do it${why}`, { cause: error });
    } finally {
      waiting = false;
    }
  }

  /** The error of a call Redis did not answer in time: why, when the outbox knows Redis is out of reach. */
  private unanswered(): PlatformOutboxError {
    const outage = this.#availability.outage;
    const why = outage ? `; ${outageText(outage)}` : '';
    const waited = `${this.#settings.enqueueTimeoutMs} ms`;
    return new PlatformOutboxError('unavailable', `PlatformOutbox: Redis did not answer within ${waited}${why}`);
  }

  /** An error of BullMQ's commands: an outage when the connection is down, else BullMQ's own business. */
  private redisFailed(error: unknown): void {
    if (this.#started && !this.ready()) this.#availability.lost(error);
  }

  private emit<E extends keyof OutboxEvents>(
    event: E,
    telemetry: OutboxTelemetryEvent,
    target: string,
    ...payload: OutboxEvents[E]
  ): void {
    this.#telemetry.record(telemetry, target);
    this.#events.emit(event, ...payload);
  }

  private listener(): DeliveryListener {
    return {
      sent: (job, status, reconciled) =>
        this.emit('sent', 'sent', targetOf(job), { id: job.id, status, attempts: job.attemptsMade, reconciled }),
      retried: (job, reason, delayMs) =>
        this.emit('retried', 'retried', targetOf(job), { id: job.id, attempt: job.attemptsMade, reason, delayMs }),
      failed: (job, reason) => {
        // Redis out of reach now: the refusal is then counted as a dead letter until it is retried.
        this.#started?.tally.add(job.id, this.#settings.clock.now()).catch(() => undefined);
        this.emit('failed', 'failed', targetOf(job), { id: job.id, reason });
      },
      deadLettered: (job, reason) => this.emit('dead-lettered', 'dead_lettered', targetOf(job), { id: job.id, reason }),
    };
  }
}

/** The body as `codec` encodes it; the codec's own failure, whatever it threw, is the message's. */
async function sealed(codec: OutboxBodyCodec, body: unknown): Promise<string> {
  try {
    return await codec.encode(body);
  } catch (error) {
    throw new PlatformOutboxError('invalid_message', 'PlatformOutbox.enqueue: bodyCodec.encode failed on the body', {
      cause: error,
    });
  }
}

/** Why Redis did not answer, when the outbox knows it is out of reach. */
function outageText(outage: RedisOutage): string {
  return `unreachable since ${new Date(outage.since).toISOString()} (${outage.cause})`;
}

/** The integration's name in telemetry; a tenant's message is `tenants`, never the tenant's id. */
function targetOf(message: StoredMessage): string {
  return message.tenant !== undefined ? 'tenants' : (message.integration ?? 'default');
}
