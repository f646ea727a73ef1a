import { EventEmitter } from 'node:events';
import type {
  BeforeApplicationShutdown,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import type { ConnectionOptions, Queue, Worker } from 'bullmq';
import { PlatformAuthConfigError } from '../index.js';
import { RedisAvailability } from './outbox.availability.js';
import { bullMqConnection, loadBullMq, queuePrefix, type BullMq } from './outbox.connection.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { storeMessage, type ScriptClient } from './outbox.rounds.js';
import { assertSameRequest } from './outbox.identity.js';
import { RefusalTally, failedJobs, oldestEnqueuedAt } from './outbox.jobs.js';
import { checkMessage, sealMessage, storedData } from './outbox.message.js';
import { REFUSED } from './outbox.reasons.js';
import type { OutboxSettings } from './outbox.settings.js';
import { OutboxTelemetry, type OutboxTelemetryEvent } from './outbox.telemetry.js';
import type { OutboxEvents, OutboxFailedJob, OutboxMessage, OutboxStatus, StoredMessage } from './outbox.types.js';
import { mayHaveReached, startWorker, type DeliveryListener, type Sender } from './outbox.worker.js';

/** How many failed jobs `deadLetters()` and `failures()` read at most. */
const FAILED_PAGE = 10_000;
/** How many jobs of each state `status()` looks at for the oldest. */
const OLDEST_LOOK = 10;

/** What the outbox holds once it is started: BullMQ, its connection to Redis, the queue and the refusal tally. */
interface Started {
  readonly bull: BullMq;
  readonly redis: { readonly client: object; close(): void };
  readonly connection: ConnectionOptions;
  readonly queue: Queue;
  readonly tally: RefusalTally;
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
    const { queueName, logger, clock, enqueueTimeoutMs } = settings;
    this.#availability = new RedisAvailability(queueName, logger, clock, enqueueTimeoutMs);
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
    queue.on('error', (error) => this.#availability.failed(error));
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
      redis: { failed: (error) => this.#availability.failed(error), answering: () => this.#availability.answering() },
    });
  }

  /**
   * @internal The workers finish the sends in flight while the integrations' clients still work. Without Redis they
   * stop at once: no send could be acknowledged, and BullMQ gives the jobs to another worker once their locks expire.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.#worker?.close(!this.#availability.ready());
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
    const { stored, json } =
      bodyCodec && checked.body !== undefined
        ? await sealMessage(checked, bodyCodec)
        : { stored: checked, json: checkedJson };
    const { connection, queue } = this.started();
    // One bound for the commands: `enqueueTimeoutMs` is how long `enqueue` waits for Redis, not each command.
    const options = {
      attempts,
      backoff: { type: 'outbox' },
      removeOnComplete: { age: Math.ceil(keepSentMs / 1000) },
      removeOnFail: false,
    };
    const client = connection as unknown as ScriptClient;
    const held = await this.#availability.bounded((live) =>
      storeMessage({ queue, client, id, stored, json, options, clock, claimMs: enqueueTimeoutMs, live }),
    );
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
    await this.#availability.bounded(async () => {
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
    this.#availability.assertAnswering();
    const [counts, refusals, oldest] = await this.#availability.bounded(() =>
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

  private failedJobs(): Promise<OutboxFailedJob[]> {
    const { queue } = this.started();
    return this.#availability.bounded(() => failedJobs(queue, FAILED_PAGE));
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

/** The integration's name in telemetry; a tenant's message is `tenants`, never the tenant's id. */
function targetOf(message: StoredMessage): string {
  return message.tenant !== undefined ? 'tenants' : (message.integration ?? 'default');
}
