const MIN_SWEEP_THRESHOLD = 1024;

/**
 * A map whose entries are forgotten once their expiry has passed. Expired entries are swept whenever the map has
 * doubled since the last sweep, so memory stays proportional to the live entries at an amortised O(1) per insert,
 * without a timer that would keep the process alive.
 */
export class ExpiringMap<V extends { readonly expiresAt: number }> {
  private readonly entries = new Map<string, V>();
  private sweepThreshold = MIN_SWEEP_THRESHOLD;

  /** `now` is emulator time in ms, the same scale as `expiresAt`. */
  constructor(private readonly now: () => number) {}

  get size(): number {
    return this.entries.size;
  }

  /** The entry, or `undefined` when it is unknown. An expired entry is returned until a sweep forgets it. */
  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: V): void {
    this.entries.set(key, value);
    if (this.entries.size >= this.sweepThreshold) this.sweep();
  }

  /** Keeps at most `limit` entries: the expired ones go first, then the oldest inserted. */
  trimTo(limit: number): void {
    if (this.entries.size <= limit) return;
    this.sweep();
    for (const key of this.entries.keys()) {
      if (this.entries.size <= limit) break;
      this.entries.delete(key);
    }
  }

  values(): IterableIterator<V> {
    return this.entries.values();
  }

  keyed(): IterableIterator<[string, V]> {
    return this.entries.entries();
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
    this.sweepThreshold = Math.max(MIN_SWEEP_THRESHOLD, this.entries.size * 2);
  }
}
