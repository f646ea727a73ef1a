/** A rate limit as the gate applies it, derived once from the `rateLimit` option. */
export interface RateLimitShape {
  /** Requests per second on average; a fraction is allowed (20 a minute is `1 / 3`). */
  readonly requestsPerSecond: number;
  /** How many requests may go at once after a quiet spell; at most {@link RateLimitShape.perWindow}. */
  readonly burst: number;
  /** At most this many requests in any {@link RateLimitShape.windowMs}: the bound the platform counts against. */
  readonly perWindow: number;
  readonly windowMs: number;
}

/**
 * A tenth of the window: requests do not reach the platform at the moment their turn came (an event loop that woke
 * late, a connection, the platform's own queue), and a second counted there must still hold no more than the limit.
 */
const HEADROOM = 0.1;

/**
 * The window a limit is kept over. A token bucket alone lets `burst` go at once and then refills, so a second can
 * carry up to twice the limit; the platform counts requests per second, so the gate also keeps a sliding window:
 * never more than the whole part of `requestsPerSecond` in any 1.1 s (one request per `1.1 / requestsPerSecond`
 * seconds below one a second), the tenth being headroom for the way to the platform.
 */
export function rateLimitShape(requestsPerSecond: number, burst?: number): RateLimitShape {
  const perWindow = Math.max(1, Math.floor(requestsPerSecond));
  const windowMs = Math.max(1_000, (1_000 * perWindow) / requestsPerSecond) * (1 + HEADROOM);
  return { requestsPerSecond, burst: Math.min(burst ?? perWindow, perWindow), perWindow, windowMs };
}

/** The part of the window kept free for the way to the platform. */
export function headroomMs(shape: RateLimitShape): number {
  return shape.windowMs - shape.windowMs / (1 + HEADROOM);
}

/** The part of a limit each of `replicas` keeps while they cannot share one: together they stay within it. */
export function shareOf(shape: RateLimitShape, replicas: number): RateLimitShape {
  const n = Math.max(1, replicas);
  return rateLimitShape(shape.requestsPerSecond / n, Math.max(1, Math.floor(shape.burst / n)));
}

/**
 * When each request may go, for one process: a token bucket (GCRA: one request every `1000 / requestsPerSecond` ms,
 * `burst` at once) and the sliding window, both kept as reservations in arrival order, so a request never overtakes
 * an earlier one. The Redis script of the shared gate applies the same rules to the fleet's state; this is its model.
 */
export class RateLimitSchedule {
  /** GCRA's theoretical arrival time: when the bucket would be full again. */
  private tat = 0;
  /** The times of the last `perWindow` requests, oldest first. */
  private readonly granted: number[] = [];
  private holdUntilMs = 0;

  constructor(readonly shape: RateLimitShape) {}

  /** When the next request may go, at the earliest `nowMs`; nothing is taken. */
  next(nowMs: number): number {
    return this.earliest(nowMs, this.tat, this.granted);
  }

  /** Takes the next slot: the time the request may go (at the earliest `nowMs`). */
  take(nowMs: number): number {
    const at = this.earliest(nowMs, this.tat, this.granted);
    this.commit(at);
    return at;
  }

  /** No request goes before `untilMs` (a 429's or 503's `Retry-After`). */
  hold(untilMs: number): void {
    this.holdUntilMs = Math.max(this.holdUntilMs, untilMs);
  }

  /**
   * Nothing goes before `atMs`, and from then one request per interval, without a burst: for a schedule that takes
   * over from another one whose recent requests it cannot see.
   */
  openAt(atMs: number): void {
    this.hold(atMs);
    this.tat = Math.max(this.tat, atMs + (this.shape.burst - 1) * (1_000 / this.shape.requestsPerSecond));
  }

  /** The times `count` requests queued now would go at, on a copy of the state. */
  simulate(nowMs: number, count: number): number[] {
    const copy = new RateLimitSchedule(this.shape);
    copy.tat = this.tat;
    copy.granted.push(...this.granted);
    copy.holdUntilMs = this.holdUntilMs;
    return Array.from({ length: count }, () => copy.take(nowMs));
  }

  private earliest(nowMs: number, tat: number, granted: readonly number[]): number {
    const { burst, perWindow, windowMs, requestsPerSecond } = this.shape;
    const interval = 1_000 / requestsPerSecond;
    let at = Math.max(nowMs, this.holdUntilMs, tat - (burst - 1) * interval);
    if (granted.length > 0) at = Math.max(at, granted.at(-1)!);
    if (granted.length >= perWindow) at = Math.max(at, granted[granted.length - perWindow] + windowMs);
    return at;
  }

  private commit(at: number): void {
    this.tat = Math.max(this.tat, at) + 1_000 / this.shape.requestsPerSecond;
    this.granted.push(at);
    if (this.granted.length > this.shape.perWindow) this.granted.splice(0, this.granted.length - this.shape.perWindow);
  }
}
