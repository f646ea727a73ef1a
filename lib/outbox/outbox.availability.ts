import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../index.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { redisReason } from './outbox.reasons.js';

/** A Redis client's connection events (a cluster's `connect` is its `ready`, see `bullMqConnection`). */
interface EventSource {
  on(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
  off?(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
  removeListener?(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
}

/** Since when Redis is out of reach, and why; `undefined` while it answers. */
interface RedisOutage {
  readonly since: number;
  readonly cause: string;
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
 * Whether the outbox's Redis answers, for its log, `status()` and every call to it: one warning when it goes out of
 * reach, however many commands, jobs and reconnections fail meanwhile, and one line when it answers again; each call
 * bounded by `enqueueTimeoutMs`.
 */
export class RedisAvailability {
  #outage?: RedisOutage;
  #waiting: (() => void)[] = [];
  readonly #detach: (() => void)[] = [];
  #client?: { readonly isReady?: unknown };

  constructor(
    private readonly queueName: string,
    private readonly logger: LoggerService,
    private readonly clock: Clock,
    private readonly boundMs: number,
  ) {}

  /** Whether Redis answers now: the watched client's `isReady` (node-redis's, a cluster's and a sentinel's alike). */
  ready(): boolean {
    return this.#client?.isReady === true;
  }

  /** Rejects at once, naming since when and why, while Redis is known to be out of reach. */
  assertAnswering(): void {
    if (this.#outage) throw new PlatformOutboxError('unavailable', `PlatformOutbox: Redis is ${this.outageText()}`);
  }

  /**
   * Redis out of reach is a `PlatformOutboxError` (`unavailable`) after `enqueueTimeoutMs`, not a caller waiting for
   * as long as the outage lasts, nor the driver's own error (its `cause`). The client keeps every command back while
   * it reconnects (it has no timer per command to drop one), so `operation` starts only once the client is ready
   * within the bound: a call that rejected sends nothing later, and no sequence of commands (`retry`'s) is left half
   * done by one that ran after the caller was told it did not. An `operation` that waits between its commands stops
   * once `live()` is false.
   */
  async bounded<T>(operation: (live: () => boolean) => Promise<T>): Promise<T> {
    let waiting = true;
    const ready = this.ready() ? Promise.resolve() : new Promise<void>((resolve) => this.#waiting.push(resolve));
    const started = ready.then(() => {
      if (!waiting) throw this.unanswered();
      return operation(() => waiting);
    });
    try {
      return await within(started, this.boundMs, this.clock, () => this.unanswered());
    } catch (error) {
      if (error instanceof PlatformOutboxError) throw error;
      const why = this.#outage ? `; ${this.outageText()}` : '';
      throw new PlatformOutboxError('unavailable', `PlatformOutbox: Redis did not do it${why}`, { cause: error });
    } finally {
      waiting = false;
    }
  }

  /** The error of a call Redis did not answer in time: why, when the outbox knows Redis is out of reach. */
  private unanswered(): PlatformOutboxError {
    const why = this.#outage ? `; ${this.outageText()}` : '';
    return new PlatformOutboxError(
      'unavailable',
      `PlatformOutbox: Redis did not answer within ${this.boundMs} ms${why}`,
    );
  }

  private outageText(): string {
    const { since, cause } = this.#outage!;
    return `unreachable since ${new Date(since).toISOString()} (${cause})`;
  }

  /** Follows `client`'s `error` and `ready` events until `close()`; its `isReady` says whether Redis answers. */
  watch(client: object): void {
    this.#client = client;
    const source = client as Partial<EventSource>;
    if (typeof source.on !== 'function') return;
    const onError = (error?: unknown): void => this.lost(error);
    const onReady = (): void => this.back();
    source.on.call(client, 'error', onError);
    source.on.call(client, 'ready', onReady);
    this.#detach.push(() => {
      const off = source.off ?? source.removeListener;
      off?.call(client, 'error', onError);
      off?.call(client, 'ready', onReady);
    });
  }

  /** An error of the client's or of BullMQ's commands: an outage when the connection is down. */
  failed(error: unknown): void {
    if (this.#client && !this.ready()) this.lost(error);
  }

  lost(error: unknown): void {
    if (this.#outage) return;
    const cause = redisReason(error);
    this.#outage = { since: this.clock.now(), cause };
    this.logger.warn(
      `PlatformOutbox (queue ${this.queueName}): Redis is unreachable (${cause}); until it answers, sends are not ` +
        'recorded, enqueue rejects after enqueueTimeoutMs and status() at once',
    );
  }

  back(): void {
    const outage = this.#outage;
    this.#outage = undefined;
    if (outage) {
      this.logger.log(
        `PlatformOutbox (queue ${this.queueName}): Redis answers again after ${Math.max(0, this.clock.now() - outage.since)} ms`,
      );
    }
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  /** Resolves at once while Redis answers, else once it answers again (or the outbox closes). */
  answering(): Promise<void> {
    if (!this.#outage) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  close(): void {
    for (const detach of this.#detach.splice(0)) detach();
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
