import type { Clock } from '../index.js';

/** How many owners' holds and turns one process keeps before it forgets those in the past. */
const REMEMBERED = 4_096;

/**
 * Per owner, in this process: until when the platform holds it (a `Retry-After`, the integration's rate limit with
 * no turn soon), and, for an owner with a rate limit, its sends in flight and its next turn. A job whose owner is held
 * waits out the hold in BullMQ's delayed set, not in a worker's slot; so does the second job of a rate-limited owner
 * while its first waits for its turn, each spaced one turn after the last.
 */
export class OwnerTurns {
  readonly #held = new Map<string, number>();
  readonly #next = new Map<string, number>();
  readonly #sending = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /**
   * How long the job of `owner` waits before it may be sent (ms), 0 when it goes now; a job that goes now is one in
   * flight until `done(owner)`. `perSecond`: the owner's rate limit, if it has one.
   */
  admit(owner: string, perSecond?: number): number {
    const now = this.clock.now();
    const held = this.#held.get(owner);
    if (held !== undefined && held > now) return held - now;
    this.#held.delete(owner);
    const sending = this.#sending.get(owner) ?? 0;
    if (perSecond === undefined || !(perSecond > 0) || sending === 0) {
      this.#sending.set(owner, sending + 1);
      return 0;
    }
    const next = Math.max(now, this.#next.get(owner) ?? now) + 1_000 / perSecond;
    this.remember(this.#next, owner, next);
    return Math.ceil(next - now);
  }

  done(owner: string): void {
    const sending = (this.#sending.get(owner) ?? 1) - 1;
    if (sending > 0) this.#sending.set(owner, sending);
    else this.#sending.delete(owner);
  }

  /** The platform takes nothing from `owner` until `untilMs` (on the outbox's clock). */
  hold(owner: string, untilMs: number): void {
    if (untilMs > (this.#held.get(owner) ?? 0)) this.remember(this.#held, owner, untilMs);
  }

  private remember(map: Map<string, number>, owner: string, untilMs: number): void {
    map.set(owner, untilMs);
    if (map.size <= REMEMBERED) return;
    const now = this.clock.now();
    for (const [key, until] of map) if (until <= now) map.delete(key);
  }
}
