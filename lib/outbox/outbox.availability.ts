import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../index.js';
import { redisReason } from './outbox.reasons.js';

/** A Redis client's connection events (a cluster's `connect` is its `ready`, see `bullMqConnection`). */
interface EventSource {
  on(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
  off?(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
  removeListener?(event: 'error' | 'ready', listener: (error?: unknown) => void): unknown;
}

/** Since when Redis is out of reach, and why; `undefined` while it answers. */
export interface RedisOutage {
  readonly since: number;
  readonly cause: string;
}

/**
 * Whether the outbox's Redis answers, for its log and `status()`: one warning when it goes out of reach, however many
 * commands, jobs and reconnections fail meanwhile, and one line when it answers again.
 */
export class RedisAvailability {
  #outage?: RedisOutage;
  #waiting: (() => void)[] = [];
  readonly #detach: (() => void)[] = [];

  constructor(
    private readonly queueName: string,
    private readonly logger: LoggerService,
    private readonly clock: Clock,
  ) {}

  get outage(): RedisOutage | undefined {
    return this.#outage;
  }

  /** Follows `client`'s `error` and `ready` events until `close()`. */
  watch(client: unknown): void {
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

  /** Resolves at once while `ready()`, else at the client's next `ready` event (or once the outbox closes). */
  connected(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
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
