import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../../platform-auth.clock.js';
import { shutdownError } from '../../platform-auth.errors.js';
import { StoreUnavailable } from '../../store/store-operation.bounded.js';
import { eitherSignal } from '../../util/abort.util.js';
import type { RateLimitStatus } from '../../token/token-status.types.js';
import type { CallGate } from '../call-gate.js';
import { LocalRateGate } from './local-rate.gate.js';
import { RateLimitWaitError } from './rate-limit.errors.js';
import type { RateLimitEvents, RateLimitLimits } from './rate-limit.gate.js';
import { headroomMs, shareOf, type RateLimitShape } from './rate-limit.schedule.js';
import { RedisRateBucket, type SharedBucketChannel } from './redis-rate.bucket.js';
import { outageTiming, type OutageTiming } from './shared-rate.outage.js';

/** A replica not heard from for this long no longer counts when the others work out their share. */
const SEEN_WINDOW_MS = 15_000;
/** Well within the window, so a replica that sends nothing for a while still counts. */
const HEARTBEAT_MS = 5_000;

interface Fallback {
  readonly gate: LocalRateGate;
  readonly since: number;
  readonly problem: string;
}

/** Why a request left the turn it waited for: the switch between the bucket and the share; it is planned again. */
class Replanned extends Error {}

/**
 * The rate limit a fleet shares through Redis: each request reserves its turn in the fleet's bucket (one script,
 * one round trip) and waits for it on the integration's clock. When the store does not answer, the replica keeps its
 * share of the limit (the limit divided by the replicas last seen through the store) in a local gate, says so once
 * in the log, in status and to telemetry, and goes back to the shared bucket once the store answers again. At each
 * switch the requests waiting on one side give up their turns and queue again, in arrival order, on the other; the
 * timing that keeps the fleet within the limit meanwhile is {@link outageTiming}'s.
 *
 * A request aborted while it waits for a reserved turn gives the turn up to no one: the fleet then sends less than
 * the limit, never more.
 */
export class SharedRateGate implements CallGate {
  private readonly bucket: RedisRateBucket;
  /** Half the window's headroom: how late a turn may still be used. */
  private readonly lateToleranceMs: number;
  private readonly timing: OutageTiming;
  private replicasSeen = 1;
  private waitingShared = 0;
  private fallback?: Fallback;
  /** When the latest request the store answered was asked, epoch ms on the clock: how fresh a shared turn is. */
  private answeredAskedAt = -Infinity;
  /** Kept here as well, so a fallback gate made during a hold honours it. */
  private heldUntil = 0;
  private stopHeartbeat = () => undefined as void;
  private stopProbing?: () => void;
  private probing?: Promise<void>;
  private closed = false;
  /** Aborted at `close`: it ends every wait for a turn, with the shutdown error. */
  readonly #closing = new AbortController();
  /** Aborted at the switch to the share: the requests sleeping on shared turns give them up. */
  #replan = new AbortController();

  constructor(
    private readonly shape: RateLimitShape,
    channel: SharedBucketChannel,
    private readonly clock: Clock,
    private readonly limits: RateLimitLimits,
    private readonly events: RateLimitEvents,
    private readonly logger: Pick<LoggerService, 'log' | 'warn'>,
  ) {
    this.bucket = new RedisRateBucket(channel, shape, randomUUID(), SEEN_WINDOW_MS);
    this.lateToleranceMs = headroomMs(shape) / 2;
    this.timing = outageTiming(shape);
  }

  /** With the store's connection: the heartbeat that makes this replica count in the others' share. */
  start(): void {
    const beat = () => {
      if (this.closed) return;
      void this.probe();
      this.stopHeartbeat = scheduleOn(this.clock, HEARTBEAT_MS, beat);
    };
    beat();
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.#closing.signal.throwIfAborted();
    const startedAt = this.clock.now();
    const deadline = startedAt + this.limits.maxWaitMs;
    for (;;) {
      signal?.throwIfAborted();
      if (this.clock.now() - startedAt > this.limits.maxWaitMs)
        throw new RateLimitWaitError(this.limits.integration, this.clock.now() - startedAt, this.limits.maxWaitMs);
      const fallback = this.fallback;
      if (fallback) {
        try {
          return await fallback.gate.acquire(signal);
        } catch (error) {
          if (error instanceof Replanned) continue;
          throw error;
        }
      }
      const askedAt = this.clock.now();
      let reply;
      try {
        reply = await this.bucket.take(Math.max(0, deadline - askedAt));
      } catch (error) {
        this.unavailable(error);
        continue;
      }
      // The first answer after an outage: the turn was reserved before the hold that answer sets, so it is given up.
      if (this.answered(reply.replicasSeen, askedAt)) continue;
      if (!reply.granted) {
        throw new RateLimitWaitError(
          this.limits.integration,
          askedAt - startedAt + reply.waitMs,
          this.limits.maxWaitMs,
        );
      }
      if (reply.waitMs > 0 && !(await this.sleep(reply.waitMs, signal))) continue;
      if (!(await this.fresh())) continue;
      // A turn taken too late (a slow answer, an event loop that woke late) would reach the platform beside later
      // turns of other replicas: it is given up, and a new one taken.
      if (this.clock.now() - askedAt - reply.waitMs <= this.lateToleranceMs) {
        this.events.waited(this.clock.now() - startedAt);
        return;
      }
    }
  }

  /** `false` when the turn was given up at the switch to the share. */
  private async sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    const replan = this.#replan.signal;
    this.waitingShared += 1;
    this.keepProbing();
    try {
      await this.clock.sleep(ms, eitherSignal(signal, eitherSignal(this.#closing.signal, replan)));
      return true;
    } catch (error) {
      if (replan.aborted && !signal?.aborted && !this.#closing.signal.aborted) return false;
      throw error;
    } finally {
      this.waitingShared -= 1;
    }
  }

  /**
   * A shared turn goes only while the store answered this replica within `freshMs`: one that went silent may be down,
   * and the others then open their shares at a time that counts on this one sending no more shared turns.
   */
  private async fresh(): Promise<boolean> {
    if (!this.fallback && this.clock.now() - this.answeredAskedAt > this.timing.freshMs) await this.probe();
    // One probe: a store that answers, but slower than a window, leaves the turn stale, and the caller takes a new
    // one within its own deadline and signal rather than waiting on probes for good.
    return !this.fallback && this.clock.now() - this.answeredAskedAt <= this.timing.freshMs;
  }

  /** The heartbeat alone, one at a time: it keeps shared turns fresh, and finds the store gone or back. */
  private probe(): Promise<void> {
    if (this.probing) return this.probing;
    const askedAt = this.clock.now();
    const probing = this.bucket.seen().then(
      (reply) => void this.answered(reply.replicasSeen, askedAt),
      (error: unknown) => this.unavailable(error),
    );
    this.probing = probing;
    void probing.finally(() => {
      if (this.probing === probing) this.probing = undefined;
    });
    return probing;
  }

  /** Every `probeMs` while requests sleep on shared turns (and nothing fresher came), or while on the share. */
  private keepProbing(): void {
    if (this.stopProbing || this.closed) return;
    this.stopProbing = scheduleOn(this.clock, this.timing.probeMs, () => {
      this.stopProbing = undefined;
      if (this.closed || (!this.fallback && this.waitingShared === 0)) return;
      if (this.fallback || this.clock.now() - this.answeredAskedAt >= this.timing.probeMs) void this.probe();
      this.keepProbing();
    });
  }

  /** Holds this replica at once and, through the store, the fleet; a store that does not answer holds this one only. */
  holdUntil(untilMs: number): void {
    this.heldUntil = Math.max(this.heldUntil, untilMs);
    this.fallback?.gate.holdUntil(untilMs);
    if (this.fallback) return;
    const askedAt = this.clock.now();
    this.bucket.hold(untilMs - askedAt).then(
      (reply) => void this.answered(reply.replicasSeen, askedAt),
      (error: unknown) => {
        this.unavailable(error);
        this.fallback?.gate.holdUntil(untilMs);
      },
    );
  }

  status(): RateLimitStatus {
    const fallback = this.fallback;
    const shape = fallback ? shareOf(this.shape, this.replicasSeen) : this.shape;
    return {
      mode: fallback ? 'fallback' : 'shared',
      requestsPerSecond: shape.requestsPerSecond,
      replicasSeen: this.replicasSeen,
      waiting: this.waitingShared + (fallback?.gate.waiting ?? 0),
      ...(fallback && { problem: fallback.problem, since: new Date(fallback.since) }),
    };
  }

  close(): void {
    this.closed = true;
    this.stopHeartbeat();
    this.stopProbing?.();
    this.stopProbing = undefined;
    this.#closing.abort(shutdownError());
    this.fallback?.gate.close();
  }

  /** `true` when this answer ends a fallback: the replica holds the fleet, and its queued requests plan again. */
  private answered(replicasSeen: number, askedAt: number): boolean {
    this.replicasSeen = replicasSeen;
    this.answeredAskedAt = Math.max(this.answeredAskedAt, askedAt);
    const fallback = this.fallback;
    if (!fallback || this.closed) return false;
    this.fallback = undefined;
    // Before any of the requests queued on the share asks for a turn (one connection keeps the order): the other
    // replicas may still send on their shares for up to `probeMs`, and the bucket knows nothing of those requests.
    const heldAt = this.clock.now();
    this.bucket.hold(this.timing.returnHoldMs).then(
      (reply) => void this.answered(reply.replicasSeen, heldAt),
      (error: unknown) => this.unavailable(error),
    );
    fallback.gate.release(new Replanned('planned again on the shared bucket'));
    this.logger.log('Rate limit: the token store answers again; the replicas share one limit again.');
    this.events.modeChanged('shared');
    return true;
  }

  private unavailable(error: unknown): void {
    if (!(error instanceof StoreUnavailable)) throw error;
    if (this.fallback) return;
    const now = this.clock.now();
    const share = shareOf(this.shape, this.replicasSeen);
    const gate = new LocalRateGate(share, this.clock, this.limits, this.events.waited);
    // The other replicas may still send shared turns for up to `freshMs`, and the window before that may be full.
    gate.openAt(now + this.timing.fallbackOpensAfterMs);
    if (this.heldUntil > now) gate.holdUntil(this.heldUntil);
    this.fallback = { gate, since: now, problem: error.problem };
    if (this.closed) {
      gate.close();
      return;
    }
    // The requests sleeping on shared turns give them up and queue on the share, in the order they slept.
    const replan = this.#replan;
    this.#replan = new AbortController();
    replan.abort(new Replanned('planned again on the share'));
    this.logger.warn(
      `Rate limit: the token store does not answer (${error.said}); this replica keeps its share of the limit, ${round(share.requestsPerSecond)} requests/s (1/${this.replicasSeen} of ${round(this.shape.requestsPerSecond)}), until it answers again.`,
    );
    this.events.modeChanged('fallback');
    this.keepProbing();
  }
}

function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}
