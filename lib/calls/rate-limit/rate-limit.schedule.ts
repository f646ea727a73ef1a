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

/** When a request may go, and whether the window or a hold (not the bucket, not its arrival) set that time. */
interface Due {
  readonly at: number;
  readonly held: boolean;
}

/**
 * When each request may go, for one process: a token bucket (GCRA: one request every `1000 / requestsPerSecond` ms,
 * `burst` at once) and the sliding window, both kept as reservations in arrival order, so a request never overtakes
 * an earlier one. The bucket does not refill while the window or a hold keeps a request waiting: that request leaves
 * it empty, and those behind it go one per interval, so a burst follows a quiet spell only. Were it to refill, demand
 * that never lets up would go as a whole burst at each window's edge, and a burst that reaches the platform later
 * than the headroom would share a second with the next one. The Redis script of the shared gate applies the same
 * rules to the fleet's state; this is its model.
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
    return this.due(nowMs).at;
  }

  /**
   * Takes the next slot for a request that asked at `askedAtMs`: the time it may go, at the earliest `nowMs`. A
   * request taken later than it asked (a queue's head, its sleep ended late) says when it asked, so a window or hold
   * that kept it waiting still empties the bucket.
   */
  take(nowMs: number, askedAtMs = nowMs): number {
    const due = this.due(Math.min(askedAtMs, nowMs));
    const at = Math.max(nowMs, due.at);
    this.commit(at, due.held);
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
    this.tat = Math.max(this.tat, atMs + (this.shape.burst - 1) * this.interval());
  }

  /** The times the requests queued now, which asked at `askedAtMs` (in order), would go at, on a copy of the state. */
  simulate(nowMs: number, askedAtMs: readonly number[]): number[] {
    const copy = new RateLimitSchedule(this.shape);
    copy.tat = this.tat;
    copy.granted.push(...this.granted);
    copy.holdUntilMs = this.holdUntilMs;
    return askedAtMs.map((asked) => copy.take(nowMs, asked));
  }

  private interval(): number {
    return 1_000 / this.shape.requestsPerSecond;
  }

  private due(askedAtMs: number): Due {
    const { burst, perWindow, windowMs } = this.shape;
    const granted = this.granted;
    let paced = Math.max(askedAtMs, this.tat - (burst - 1) * this.interval());
    if (granted.length > 0) paced = Math.max(paced, granted.at(-1)!);
    let held = this.holdUntilMs;
    if (granted.length >= perWindow) held = Math.max(held, granted[granted.length - perWindow] + windowMs);
    return { at: Math.max(paced, held), held: held > paced };
  }

  private commit(at: number, held: boolean): void {
    const interval = this.interval();
    if (held) this.tat = Math.max(this.tat, at + (this.shape.burst - 1) * interval);
    this.tat = Math.max(this.tat, at) + interval;
    this.granted.push(at);
    if (this.granted.length > this.shape.perWindow) this.granted.splice(0, this.granted.length - this.shape.perWindow);
  }
}
