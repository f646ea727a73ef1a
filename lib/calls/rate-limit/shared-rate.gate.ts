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

/** A replica not heard from for this long no longer counts when the others work out their share. */
const SEEN_WINDOW_MS = 15_000;
/** Well within the window, so a replica that sends nothing for a while still counts. */
const HEARTBEAT_MS = 5_000;
/** While the store does not answer, it is asked again at most this often (one request's round trip, not each). */
const PROBE_MS = 1_000;

interface Fallback {
  readonly gate: LocalRateGate;
  readonly since: number;
  readonly problem: string;
  retryAt: number;
}

/**
 * The rate limit a fleet shares through Redis: each request reserves its turn in the fleet's bucket (one script,
 * one round trip) and waits for it on the integration's clock. When the store does not answer, the replica keeps its
 * share of the limit (the limit divided by the replicas last seen through the store) in a local gate, says so once
 * in the log, in status and to telemetry, and goes back to the shared bucket once the store answers again.
 *
 * A request aborted while it waits for a reserved turn gives the turn up to no one: the fleet then sends less than
 * the limit, never more.
 */
export class SharedRateGate implements CallGate {
  private readonly bucket: RedisRateBucket;
  /** Half the window's headroom: how late a turn may still be used. */
  private readonly lateToleranceMs: number;
  private replicasSeen = 1;
  private waitingShared = 0;
  private fallback?: Fallback;
  /** Kept here as well, so a fallback gate made during a hold honours it. */
  private heldUntil = 0;
  private stopHeartbeat = () => undefined as void;
  private closed = false;
  /** Aborted at `close`: it ends every wait for a turn, with the shutdown error. */
  readonly #closing = new AbortController();
  /** Fallback gates given up when the store answered again, while requests still wait in them: closed at `close`. */
  #retired: LocalRateGate[] = [];

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
  }

  /** With the store's connection: the heartbeat that makes this replica count in the others' share. */
  start(): void {
    const beat = () => {
      if (this.closed) return;
      this.bucket.seen().then(
        (reply) => this.answered(reply.replicasSeen),
        (error: unknown) => this.unavailable(error),
      );
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
      const fallback = this.fallback;
      if (fallback && this.clock.now() < fallback.retryAt) return fallback.gate.acquire(signal);
      const askedAt = this.clock.now();
      let reply;
      try {
        reply = await this.bucket.take(Math.max(0, deadline - askedAt));
      } catch (error) {
        this.unavailable(error);
        return this.fallback!.gate.acquire(signal);
      }
      this.answered(reply.replicasSeen);
      if (!reply.granted) {
        throw new RateLimitWaitError(
          this.limits.integration,
          askedAt - startedAt + reply.waitMs,
          this.limits.maxWaitMs,
        );
      }
      if (reply.waitMs > 0) await this.sleep(reply.waitMs, signal);
      // A turn taken too late (a slow answer, an event loop that woke late) would reach the platform beside later
      // turns of other replicas: it is given up, and a new one taken.
      if (this.clock.now() - askedAt - reply.waitMs <= this.lateToleranceMs) {
        this.events.waited(this.clock.now() - startedAt);
        return;
      }
    }
  }

  private async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.waitingShared += 1;
    try {
      await this.clock.sleep(ms, eitherSignal(signal, this.#closing.signal));
    } finally {
      this.waitingShared -= 1;
    }
  }

  /** Holds this replica at once and, through the store, the fleet; a store that does not answer holds this one only. */
  holdUntil(untilMs: number): void {
    this.heldUntil = Math.max(this.heldUntil, untilMs);
    this.fallback?.gate.holdUntil(untilMs);
    if (this.fallback) return;
    this.bucket.hold(untilMs - this.clock.now()).then(
      (reply) => this.answered(reply.replicasSeen),
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
    this.#closing.abort(shutdownError());
    this.fallback?.gate.close();
    for (const gate of this.#retired) gate.close();
    this.#retired = [];
  }

  private answered(replicasSeen: number): void {
    this.replicasSeen = replicasSeen;
    const fallback = this.fallback;
    if (!fallback || this.closed) return;
    this.fallback = undefined;
    // Requests already queued there go on their turns; the gate is kept until they have, so `close` can end them.
    this.#retired = this.#retired.filter((gate) => gate.waiting > 0);
    if (fallback.gate.waiting > 0) this.#retired.push(fallback.gate);
    // The fleet's bucket never saw what this replica sent on its share: the fleet waits until that has left the
    // window, so the bucket's burst does not land on top of it.
    const lastTurn = fallback.gate.lastTurn;
    if (lastTurn !== undefined && lastTurn + this.shape.windowMs > this.clock.now())
      this.holdUntil(lastTurn + this.shape.windowMs);
    this.logger.log('Rate limit: the token store answers again; the replicas share one limit again.');
    this.events.modeChanged('shared');
  }

  private unavailable(error: unknown): void {
    if (!(error instanceof StoreUnavailable)) throw error;
    const now = this.clock.now();
    if (this.fallback) {
      this.fallback.retryAt = now + PROBE_MS;
      return;
    }
    const share = shareOf(this.shape, this.replicasSeen);
    const gate = new LocalRateGate(share, this.clock, this.limits, this.events.waited);
    // What the fleet sent in the last window is unknown here: the share is paced from now, without a burst on top.
    gate.spendBurst();
    if (this.heldUntil > now) gate.holdUntil(this.heldUntil);
    this.fallback = { gate, since: now, problem: error.problem, retryAt: now + PROBE_MS };
    if (this.closed) {
      gate.close();
      return;
    }
    this.logger.warn(
      `Rate limit: the token store does not answer (${error.said}); this replica keeps its share of the limit, ${round(share.requestsPerSecond)} requests/s (1/${this.replicasSeen} of ${round(this.shape.requestsPerSecond)}), until it answers again.`,
    );
    this.events.modeChanged('fallback');
  }
}

function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}
