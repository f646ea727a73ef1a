import type { Clock } from '../platform-auth.clock.js';

interface Sleeper {
  readonly wakeAt: number;
  readonly resolve: () => void;
}

interface Timer {
  readonly dueAt: number;
  readonly callback: () => void;
}

/**
 * A clock for tests: time moves only when the test says so. `sleep()` parks the caller until `advance()` reaches
 * its wake time, unless `autoAdvance` is on, in which case a sleep moves time forward by itself and returns at once
 * (handy for retry back-off). Every requested delay is recorded in `sleeps`. Timers (`schedule`) fire only when
 * `advance()` or `set()` (or an auto-advancing sleep) moves time past them, so background checks never run away.
 */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: Sleeper[] = [];
  private timers: Timer[] = [];
  /** Every delay passed to `sleep()`, in order. */
  readonly sleeps: number[] = [];

  constructor(
    start: number | Date = Date.now(),
    private readonly options: { autoAdvance?: boolean } = {},
  ) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
    if (this.options.autoAdvance) {
      this.current += Math.max(0, ms);
      this.wake();
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = { wakeAt: this.current + Math.max(0, ms), resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  }

  schedule(ms: number, callback: () => void): () => void {
    const timer: Timer = { dueAt: this.current + Math.max(1, ms), callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward and wakes every sleeper whose time has come. */
  advance(ms: number): void {
    this.current += ms;
    this.wake();
  }

  /** Jumps to an absolute time (forwards or backwards). */
  set(time: number | Date): void {
    this.current = typeof time === 'number' ? time : time.getTime();
    this.wake();
  }

  /** Sleepers still waiting. */
  get pendingSleeps(): number {
    return this.sleepers.length;
  }

  private wake(): void {
    const due = this.sleepers.filter((s) => s.wakeAt <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.wakeAt > this.current);
    for (const sleeper of due) sleeper.resolve();
    const dueTimers = this.timers.filter((t) => t.dueAt <= this.current);
    this.timers = this.timers.filter((t) => t.dueAt > this.current);
    for (const timer of dueTimers) timer.callback();
  }
}
