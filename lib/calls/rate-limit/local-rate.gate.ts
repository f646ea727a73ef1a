import type { Clock } from '../../platform-auth.clock.js';
import { shutdownError } from '../../platform-auth.errors.js';
import type { RateLimitStatus } from '../../token/token-status.types.js';
import type { CallGate } from '../call-gate.js';
import { RateLimitWaitError } from './rate-limit.errors.js';
import { RateLimitSchedule, type RateLimitShape } from './rate-limit.schedule.js';

interface Waiter {
  readonly enqueuedAt: number;
  readonly go: () => void;
  readonly fail: (error: Error) => void;
}

/** What a gate tells about the time a request waited: the telemetry's histogram. */
export type WaitListener = (waitMs: number) => void;

/**
 * The rate limit of one process: requests wait in arrival order (FIFO) on the integration's clock until the schedule
 * lets them go. A request whose turn lies beyond `maxWaitMs` fails at once with {@link RateLimitWaitError}; one whose
 * signal aborts leaves the queue, and those behind it move up.
 */
export class LocalRateGate implements CallGate {
  private readonly schedule: RateLimitSchedule;
  private readonly queue: Waiter[] = [];
  /** Cancels the one sleep until the head's turn, when the queue changes under it. */
  private pumping?: AbortController;
  private closed = false;

  constructor(
    private readonly shape: RateLimitShape,
    private readonly clock: Clock,
    private readonly limits: { readonly integration: string; readonly maxWaitMs: number },
    private readonly waited: WaitListener = () => undefined,
  ) {
    this.schedule = new RateLimitSchedule(shape);
  }

  get waiting(): number {
    return this.queue.length;
  }

  status(): RateLimitStatus {
    return { mode: 'local', requestsPerSecond: this.shape.requestsPerSecond, waiting: this.queue.length };
  }

  /** Nothing runs in the background: the one sleep is the queue's, and it ends with the queue or at `close`. */
  start(): void {
    return undefined;
  }

  /** At shutdown: the queue's sleep ends, every request in it fails with the shutdown error, and so do later ones. */
  close(): void {
    this.closed = true;
    this.pumping?.abort();
    this.pumping = undefined;
    for (const waiter of this.queue.splice(0)) waiter.fail(shutdownError());
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.closed) return Promise.reject(shutdownError());
    const now = this.clock.now();
    const turn = this.schedule.simulate(now, [...this.askedAt(), now]).at(-1)!;
    if (turn - now > this.limits.maxWaitMs) return Promise.reject(this.tooLong(turn - now));
    if (this.queue.length === 0 && turn <= now) {
      this.schedule.take(now);
      this.waited(0);
      return Promise.resolve();
    }
    const turnCame = new Promise<void>((resolve, reject) => {
      const leave = () => {
        this.remove(waiter);
        reject(signal!.reason as Error);
      };
      const waiter: Waiter = {
        enqueuedAt: now,
        go: () => {
          signal?.removeEventListener('abort', leave);
          resolve();
        },
        fail: (error) => {
          signal?.removeEventListener('abort', leave);
          reject(error);
        },
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.queue.push(waiter);
      this.pump();
    });
    // Reported in the caller's own asynchronous context, not the queue's timer's: a diagnostics subscriber that
    // reads an AsyncLocalStorage sees the request whose turn came.
    return turnCame.then(() => this.waited(this.clock.now() - now));
  }

  /** No request goes before `untilMs`; those queued whose turn would now lie beyond `maxWaitMs` fail. */
  holdUntil(untilMs: number): void {
    this.schedule.hold(untilMs);
    const now = this.clock.now();
    const turns = this.schedule.simulate(now, this.askedAt());
    const late = this.queue.filter((waiter, i) => turns[i] - waiter.enqueuedAt > this.limits.maxWaitMs);
    for (const waiter of late) {
      this.remove(waiter);
      waiter.fail(this.tooLong(untilMs - now));
    }
    this.pump();
  }

  /** Opens at `atMs`, then paces without a burst (see {@link RateLimitSchedule.openAt}). */
  openAt(atMs: number): void {
    this.schedule.openAt(atMs);
    this.pump();
  }

  /**
   * Every queued request leaves the queue, in arrival order, rejected with `reason`: the caller plans them again
   * elsewhere. The gate stays usable.
   */
  release(reason: Error): void {
    this.pumping?.abort();
    this.pumping = undefined;
    for (const waiter of this.queue.splice(0)) waiter.fail(reason);
  }

  private remove(waiter: Waiter): void {
    const index = this.queue.indexOf(waiter);
    if (index < 0) return;
    this.queue.splice(index, 1);
    if (index === 0) this.pump();
  }

  /** Lets every waiter whose turn has come go, then sleeps until the next one's. */
  private pump(): void {
    this.pumping?.abort();
    this.pumping = undefined;
    const now = this.clock.now();
    while (this.queue.length > 0 && this.schedule.next(now) <= now) {
      const head = this.queue.shift()!;
      this.schedule.take(now, head.enqueuedAt);
      head.go();
    }
    if (this.queue.length === 0) return;
    const pumping = new AbortController();
    this.pumping = pumping;
    this.clock.sleep(this.schedule.next(now) - now, pumping.signal).then(
      () => {
        if (this.pumping === pumping) this.pump();
      },
      () => undefined,
    );
  }

  private askedAt(): number[] {
    return this.queue.map((waiter) => waiter.enqueuedAt);
  }

  private tooLong(waitMs: number): RateLimitWaitError {
    return new RateLimitWaitError(this.limits.integration, waitMs, this.limits.maxWaitMs);
  }
}
