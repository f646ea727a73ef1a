import type { RateLimitShape } from './rate-limit.schedule.js';

/** How a replica of a fleet sharing a limit through Redis moves between the shared bucket and its share. */
export interface OutageTiming {
  /**
   * How often the store is asked (a heartbeat alone) while requests sleep on shared turns, and while the replica is
   * on its share: half a window, at most a second.
   */
  readonly probeMs: number;
  /** A shared turn is sent only if the store answered a request asked at most this long ago: one window. */
  readonly freshMs: number;
  /** The share opens this long after the switch to it: {@link OutageTiming.freshMs} and a window. */
  readonly fallbackOpensAfterMs: number;
  /** The replica first back holds the fleet this long: {@link OutageTiming.probeMs} and a window. */
  readonly returnHoldMs: number;
}

/**
 * Why "never more than the limit in any window" holds through an outage of the store (W is the window).
 *
 * Into the outage. A replica sends on a shared turn only while the store answered a request it asked at most W ago
 * (it asks every half window while requests sleep on shared turns, so a live store always keeps it fresh). The store
 * stops answering at D; every request it answered was asked before D, so no replica sends a shared turn after D + W,
 * whether it has noticed the outage or not. A replica that notices at S (S ≥ D) gives up every shared turn its
 * requests sleep on, and they queue, in arrival order, on its share, which opens at S + 2W: the last shared send of
 * the fleet lies at or before D + W ≤ S + W, and the window before it may have been full, so a window that holds a
 * request on a share holds none on a shared turn. The shares together are the limit.
 *
 * Out of it. A replica on its share asks the store every `probeMs`, so it is back at most `probeMs` after the store
 * answers again, and the requests queued on its share then take shared turns, in arrival order: it sends nothing on
 * its share after that. The first replica back, at R, holds the fleet until R + `probeMs` + W: every other replica
 * is back by R + `probeMs`, so the bucket's first turn lies a whole window after the last request on any share, and
 * the requests the hold kept waiting go one per interval from its end, not as a burst (even when the store came back
 * empty). A replica back later holds the fleet `returnHoldMs` from its own return, which covers its own last request
 * on its share the same way.
 *
 * So an outage pauses the replica's requests for two windows (2.2 s at one request a second or more), and its end
 * for `probeMs` and a window (1.65 s at one request a second or more): seconds, never `maxWaitMs`.
 */
export function outageTiming(shape: RateLimitShape): OutageTiming {
  const windowMs = shape.windowMs;
  const probeMs = Math.min(windowMs / 2, 1_000);
  return {
    probeMs,
    freshMs: windowMs,
    fallbackOpensAfterMs: 2 * windowMs,
    returnHoldMs: probeMs + windowMs,
  };
}
