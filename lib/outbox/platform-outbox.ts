import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import type {
  BeforeApplicationShutdown,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { OutboxTelemetry } from '../telemetry/outbox-telemetry.js';
import type { OutboxTelemetryEvent } from '../telemetry/telemetry.events.js';
import {
  loadBullMq,
  openRedis,
  type OutboxBullWorker,
  type OutboxQueue,
  type OutboxRedis,
} from './outbox.connection.js';
import { RedisAvailability, type RedisOutage } from './outbox.availability.js';
import type { SendFetch } from './outbox.delivery.js';
import { boundedBy } from '../util/bounded.util.js';
import { RefusalTally } from './outbox.refusals.js';
import { storedData } from './outbox.bull.js';
import { storeJob } from './outbox.store.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { assertSameRequest } from './outbox.identity.js';
import { checkMessage, checkSealedSize } from './outbox.message.js';
import type { OutboxSettings } from './outbox.settings.js';
import type {
  OutboxEvents,
  OutboxFailedJob,
  OutboxJob,
  OutboxMessage,
  OutboxStatus,
  StoredMessage,
} from './outbox.types.js';
import { REFUSED, mayHaveReached, outboxJob, startWorker, type DeliveryListener } from './outbox.worker.js';

/** How many failed jobs `deadLetters()` and `failures()` read at most. */
const FAILED_PAGE = 10_000;
/** How many jobs of each state `status()` looks at for the oldest. */
const OLDEST_LOOK = 10;

/**
 * The outbox: `enqueue` stores a message in Redis (BullMQ) and returns its id; workers, in this process or in worker
 * processes, send it with the integration's or tenant's token and its idempotency key until the platform takes it.
 * Inject it from `PlatformOutboxModule`.
 */
export class PlatformOutbox
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  readonly #settings: OutboxSettings;
  readonly #resolveFetch: (message: StoredMessage) => Promise<SendFetch>;
  readonly #events = new EventEmitter();
  readonly #telemetry: OutboxTelemetry;
  readonly #availability: RedisAvailability;
  #redis?: OutboxRedis;
  #queue?: OutboxQueue;
  #worker?: OutboxBullWorker;
  #tally?: RefusalTally;

  /** @internal The module builds it; apps inject it. */
  constructor(settings: OutboxSettings, resolveFetch: (message: StoredMessage) => Promise<SendFetch>) {
    this.#settings = settings;
    this.#resolveFetch = resolveFetch;
    this.#telemetry = new OutboxTelemetry(settings.queueName);
    this.#availability = new RedisAvailability(settings.queueName, new Logger('PlatformOutbox'));
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
    this.#redis = await openRedis(this.#settings.connection, process.env);
    this.#availability.watch(this.#redis.connection);
    this.#queue = new bull.Queue(this.#settings.queueName, { connection: this.#redis.connection });
    this.#queue.on('error', (error) => this.redisFailed(error));
    this.#tally = new RefusalTally(this.#redis.connection, this.#settings.queueName);
    await this.#telemetry.loaded();
  }

  /** @internal Workers start once every integration of the application is up. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.#settings.worker) return;
    const bull = await loadBullMq();
    this.#worker = startWorker(
      bull,
      this.#settings.queueName,
      this.#redis!.connection,
      this.#settings.delivery,
      this.#resolveFetch,
      this.listener(),
      {
        ready: () => this.#redis?.ready() === true,
        failed: (error) => this.redisFailed(error),
        answering: () => this.#availability.answering(),
      },
    );
  }

  /**
   * @internal The workers finish the sends in flight while the integrations' clients still work. Without Redis they
   * stop at once: no send could be acknowledged, and BullMQ gives the jobs to another worker once their locks expire.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.#worker?.close(!this.#redis?.ready());
  }

  /** @internal */
  async onApplicationShutdown(): Promise<void> {
    await this.#queue?.close();
    this.#availability.close();
    this.#redis?.owned?.destroy();
  }

  /**
   * Stores `message` durably and returns its id (its integration or tenant, and its idempotency key). The same
   * request again under the same key adds nothing and returns the same id, so a caller unsure whether an enqueue went
   * through calls it again; another request under a key its integration or tenant already used is refused
   * (`PlatformOutboxKeyConflictError`).
   */
  async enqueue(message: OutboxMessage): Promise<string> {
    const { id, key, stored: checked, json: checkedJson } = checkMessage(message, this.#settings.storedHeaders);
    const { attempts, keepSentMs, bodyCodec } = this.#settings;
    const stored =
      bodyCodec && checked.body !== undefined
        ? { ...checked, body: await bodyCodec.encode(checked.body), sealed: true as const }
        : checked;
    const json = stored === checked ? checkedJson : checkSealedSize(stored);
    const queue = this.queue();
    // One bound for both commands: `enqueueTimeoutMs` is how long `enqueue` waits for Redis, not each command.
    const held = await this.bounded(() => storeJob(queue, stored, { id, attempts, keepSentMs }));
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
    const job = await this.bounded(() => this.queue().getJob(String(id)));
    if (!job || (await this.bounded(() => job.getState())) !== 'failed') {
      throw new PlatformOutboxError('not_found', 'PlatformOutbox.retry: no failed or dead-lettered job with that id');
    }
    // BullMQ's retry clears the failed reason and the counts that tell an ambiguous last attempt: the job keeps it.
    if (mayHaveReached(job) && !(job.data as StoredMessage).mayHaveReached) {
      await this.bounded(() => job.updateData({ ...(job.data as StoredMessage), mayHaveReached: true }));
    }
    await this.bounded(() => this.tally().remove(job.id!));
    await this.bounded(() => job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true }));
  }

  /**
   * The queue's counts. While Redis is known to be out of reach it rejects at once (`reason: 'unavailable'`), naming
   * since when and why, as the outbox's warning did.
   */
  async status(): Promise<OutboxStatus> {
    const queue = this.queue();
    const outage = this.#availability.outage;
    if (outage) throw new PlatformOutboxError('unavailable', `PlatformOutbox: Redis is ${outageText(outage)}`);
    const [counts, refusals] = await this.bounded(() =>
      Promise.all([
        queue.getJobCounts('wait', 'prioritized', 'delayed', 'active', 'completed', 'failed'),
        this.tally().count(),
      ]),
    );
    const failed = Math.min(counts.failed, refusals);
    const oldest = await this.bounded(() => this.oldestEnqueuedAt());
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

  /**
   * The first jobs of each state not yet ended, oldest first where the state keeps an order: a look at a few jobs,
   * whatever the queue's depth. A delayed job enqueued before them all but due later may be missed.
   */
  private async oldestEnqueuedAt(): Promise<number> {
    const queue = this.queue();
    const ids = await queue.getRanges(['wait', 'prioritized', 'delayed', 'active'], 0, OLDEST_LOOK - 1, true);
    const jobs = await Promise.all([...new Set(ids)].map((id) => queue.getJob(id)));
    return Math.min(...jobs.map((job) => job?.timestamp ?? Number.POSITIVE_INFINITY));
  }

  /** At once with a client the application gave, or while the outbox's own answers; else once it is ready again. */
  private connected(): Promise<void> {
    const redis = this.#redis;
    return redis?.owned ? this.#availability.connected(() => redis.ready()) : Promise.resolve();
  }

  private tally(): RefusalTally {
    if (!this.#tally) throw new PlatformOutboxError('unavailable', 'PlatformOutbox: the outbox is not started');
    return this.#tally;
  }

  private async failedJobs(): Promise<OutboxFailedJob[]> {
    const jobs = await this.bounded(() => this.queue().getFailed(0, FAILED_PAGE - 1));
    return jobs.map((job) => ({ ...outboxJob(job), reason: job.failedReason ?? '', failedAt: job.finishedOn }));
  }

  private queue(): OutboxQueue {
    if (!this.#queue) throw new PlatformOutboxError('unavailable', 'PlatformOutbox: the outbox is not started');
    return this.#queue;
  }

  /**
   * Redis out of reach is an error after `enqueueTimeoutMs`, not a caller waiting for as long as the outage lasts.
   * The outbox's own client keeps every command back while it reconnects (it has no timer per command to drop one),
   * so `operation` starts only once the client is ready within the bound: a call that rejected sends nothing later,
   * and no sequence of commands (`retry`'s) is left half done by one that ran after the caller was told it did not.
   */
  private bounded<T>(operation: () => Promise<T>): Promise<T> {
    const { enqueueTimeoutMs, clock } = this.#settings;
    let waiting = true;
    const started = this.connected().then(() => {
      if (!waiting) throw this.unanswered();
      return operation();
    });
    return boundedBy(started, enqueueTimeoutMs, () => this.unanswered(), clock).finally(() => (waiting = false));
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
    if (this.#redis && !this.#redis.ready()) this.#availability.lost(error);
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
      sent: (job: OutboxJob, status, reconciled) =>
        this.emit('sent', 'sent', targetOf(job), { id: job.id, status, attempts: job.attemptsMade, reconciled }),
      retried: (job, reason, delayMs) =>
        this.emit('retried', 'retried', targetOf(job), { id: job.id, attempt: job.attemptsMade, reason, delayMs }),
      failed: (job, reason) => {
        // Redis out of reach now: the refusal is then counted as a dead letter until it is retried.
        this.#tally?.add(job.id, this.#settings.clock.now()).catch(() => undefined);
        this.emit('failed', 'failed', targetOf(job), { id: job.id, reason });
      },
      deadLettered: (job, reason) => this.emit('dead-lettered', 'dead_lettered', targetOf(job), { id: job.id, reason }),
    };
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
