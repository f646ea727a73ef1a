import type { Clock } from '../platform-auth.clock.js';

/** The budget looks at the last minute, in slots of 10 s: a slot older than that is reused for the current one. */
const SLOT_MS = 10_000;
const SLOTS = 6;

/**
 * The retry budget of one integration: re-sends in the last minute stay within `percent` of its calls in that
 * minute, plus `floorPerMinute`, so an outage cannot turn every call into `maxAttempts` calls. Counting a call
 * touches a few numbers and allocates nothing: it runs on every request.
 */
export class RetryBudget {
  private readonly calls = new Float64Array(SLOTS);
  private readonly resends = new Float64Array(SLOTS);
  private readonly stamps = new Float64Array(SLOTS).fill(-1);

  constructor(
    private readonly percent: number,
    private readonly floorPerMinute: number,
    private readonly clock: Clock,
  ) {}

  countCall(): void {
    this.calls[this.slot()] += 1;
  }

  /** Takes one re-send, when the last minute's share has one left. */
  tryResend(): boolean {
    const current = this.slot();
    const oldest = this.stamps[current] - SLOTS;
    let calls = 0;
    let resends = 0;
    for (let i = 0; i < SLOTS; i += 1) {
      if (this.stamps[i] <= oldest) continue;
      calls += this.calls[i];
      resends += this.resends[i];
    }
    if (resends >= this.floorPerMinute + (calls * this.percent) / 100) return false;
    this.resends[current] += 1;
    return true;
  }

  private slot(): number {
    const stamp = Math.floor(this.clock.now() / SLOT_MS);
    const slot = stamp % SLOTS;
    if (this.stamps[slot] !== stamp) {
      this.stamps[slot] = stamp;
      this.calls[slot] = 0;
      this.resends[slot] = 0;
    }
    return slot;
  }
}
