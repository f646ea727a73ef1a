import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../platform-auth.clock.js';
import type { ExchangeOutcome, ExchangePolicy, IssuedToken, TokenSource } from '../token/token.cache.js';
import { isNotRegisteredRefusal } from '../token/next-pair.switch.js';
import { fingerprintOf, type TokenStoreCodec } from './token-store.codec.js';
import { StoreUnavailable, boundedStoreOperation } from './store-operation.bounded.js';
import type { TokenStore } from './token-store.interface.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { SharedStoreStatus } from '../token/token-status.types.js';
import { SharedStoreHealth } from './shared-store.health.js';
import type { HeldPairs, StoreNamespaces } from './store-namespaces.js';
import { PairEntries, pairKeys, type PairKeys } from './shared-token.entries.js';

export interface SharedTokenTiming {
  /** Bound on every store operation; past it the store counts as unavailable. */
  readonly operationTimeoutMs: number;
  /** How long the exchanging replica holds the lock; a crashed holder's lock lapses after this. */
  readonly lockTtlMs: number;
  /** How long a replica waits for another's token before it exchanges on its own. */
  readonly waitTimeoutMs: number;
}

/** One exchange by this replica, with the cache's rules for freshness and back-off. */
interface FleetMember {
  readonly source: TokenSource;
  readonly policy: ExchangePolicy;
  /** The pairs held when it started, and the keys of each: the pair in use owns the lock and the failure record. */
  readonly pairs: HeldPairs;
  readonly keys: PairKeys;
  readonly nextKeys?: PairKeys;
  /** The tag of the token whose refusal this exchange answers: only a token obtained after a refusal of it will do. */
  readonly answering?: string;
  /** The tokens refused here before it started: the token it obtains is stored as obtained after their refusal. */
  readonly after: readonly string[];
}

type Outcome = ExchangeOutcome;

/** What the coordinator needs besides the store: how large an entry may be, whom to tell about the lock. */
interface SharedTokenContext {
  readonly clock: Clock;
  readonly timing: SharedTokenTiming;
  readonly logger: Pick<LoggerService, 'log' | 'warn'>;
  readonly observer: Pick<PlatformAuthObserver, 'storeLock'>;
  /** A stored payload longer than this is not opened: an unreadable entry. */
  readonly maxEntryBytes: number;
  readonly mode: SharedStoreStatus['mode'];
}

const FIRST_POLL_MS = 10;
/** Low enough that a waiter sees the token within ~100 ms of its write; a few Redis reads a second per waiter. */
const MAX_POLL_MS = 100;
/** Tokens recently rejected with a 401 by this replica: a copy still in the store (delete pending) is not reused. */
const REJECTED_TAGS_KEPT = 8;

/**
 * Makes a fleet of replicas behave like one client: on a miss (or when renewal is due) a replica first looks in the
 * shared store; if nothing usable is there, one replica takes the lock, exchanges and writes "only if newer", and
 * the others poll for its token, bounded, then exchange on their own. A failed exchange is recorded for the fleet.
 *
 * The store is an optimisation, never a dependency: every operation is bounded by a short timeout, and when the
 * store is unavailable the replica exchanges locally, logging once when that starts and once when it ends.
 * Token times and the pause after a store failure come from the injected clock. Waiting for another replica is
 * real time, like the bound on one store operation or on an HTTP request: it measures the progress of other
 * processes on real servers (a lock lapses in Redis by Redis's clock), which a test clock cannot speed up.
 */
export class SharedTokenCoordinator {
  private readonly health: SharedStoreHealth;
  private readonly timing: SharedTokenTiming;
  private readonly rejectedTags: string[] = [];
  /** The tag of the last token refused here that no exchange has answered yet. */
  private unanswered?: string;
  private pendingInvalidation?: Promise<void>;
  private readonly entries: PairEntries;
  /** The namespace of the token this replica uses now: the calls it sends share that pair's rate bucket. */
  private tokenNamespace?: string;

  constructor(
    private readonly store: TokenStore,
    codec: TokenStoreCodec,
    private readonly keyPrefix: string,
    private readonly namespaces: StoreNamespaces,
    private readonly context: SharedTokenContext,
  ) {
    this.timing = context.timing;
    this.health = new SharedStoreHealth(context.clock, context.logger, context.mode);
    this.entries = new PairEntries(store, codec, context.clock, context.maxEntryBytes, this.health, (operation) =>
      this.attempt(operation),
    );
  }

  /**
   * A token from the fleet, or from this replica's own exchange when the fleet has none (or the store is down). A
   * token from the store counts no attempts; a failure shared by another replica comes back as a `backoff` failure
   * whose `retryAfterMs` makes this replica fail fast until the fleet's back-off ends.
   */
  async obtain(source: TokenSource, policy: ExchangePolicy, signal: AbortSignal): Promise<Outcome> {
    if (!this.health.mayAsk()) return source.exchange(signal, policy);
    const pairs = this.namespaces.snapshot();
    let namespace: string, next: string | undefined;
    try {
      [namespace, next] = await Promise.all([this.namespaces.active(), this.namespaces.next()]);
    } catch {
      // The key could not sign its namespace: the exchange signs too, and says why in its own words.
      return source.exchange(signal, policy);
    }
    const member: FleetMember = {
      source,
      policy,
      pairs,
      keys: this.keysOf(namespace),
      nextKeys: next === undefined ? undefined : this.keysOf(next),
      answering: this.unanswered,
      after: [...this.rejectedTags],
    };
    const outcome = await this.obtainFor(member, signal);
    if (outcome.ok && this.unanswered === member.answering) this.unanswered = undefined;
    return outcome;
  }

  /** The namespace whose token this replica uses, once it has one. */
  get namespaceInUse(): string | undefined {
    return this.tokenNamespace;
  }

  private keysOf(namespace: string): PairKeys {
    return pairKeys(this.keyPrefix, namespace);
  }

  private async obtainFor(member: FleetMember, signal: AbortSignal): Promise<Outcome> {
    const { source, policy } = member;
    let found: Outcome | { owner: string } | undefined;
    try {
      found = await this.awaitFleet(member, signal);
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) throw error;
      this.health.failed(error.problem, error.said);
      return source.exchange(signal, policy);
    }
    if (found && 'ok' in found) return found;
    return this.exchangeAndShare(member, signal, found?.owner);
  }

  /** After a 401: deletes the shared copy of `accessToken` if it is still the stored one, under either pair. */
  invalidate(accessToken: string): void {
    const tag = fingerprintOf(accessToken);
    if (this.rejectedTags.includes(tag)) return;
    this.rejectedTags.push(tag);
    this.unanswered = tag;
    if (this.rejectedTags.length > REJECTED_TAGS_KEPT) this.rejectedTags.shift();
    if (!this.health.mayAsk()) return;
    this.pendingInvalidation = this.deleteTagged(tag).then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof StoreUnavailable) this.health.failed(error.problem, error.said);
      },
    );
  }

  private async deleteTagged(tag: string): Promise<void> {
    const namespaces = await Promise.all([this.namespaces.active(), this.namespaces.next()]);
    for (const namespace of namespaces) {
      if (namespace !== undefined)
        await this.attempt(() => this.store.deleteIfTagged(this.keysOf(namespace).token, tag));
    }
  }

  /** A usable stored token or shared failure; or the lock, taken; or `undefined` when the wait ran out. */
  private async awaitFleet(member: FleetMember, signal: AbortSignal): Promise<Outcome | { owner: string } | undefined> {
    await this.pendingInvalidation;
    const settled = await this.readSettled(member);
    if (settled) return settled;
    const { observer } = this.context;
    const deadline = performance.now() + this.timing.waitTimeoutMs;
    for (let pause = FIRST_POLL_MS; ; pause = Math.min(MAX_POLL_MS, pause * 2)) {
      const owner = randomUUID();
      if (await this.tryLock(member.keys, owner)) {
        observer.storeLock('acquired');
        this.health.resolved('lock-held');
        let holding = false;
        try {
          // Another replica may have finished, or failed, between the read above and the lock.
          const again = await this.readSettled(member);
          if (again) return again;
          holding = true;
          return { owner };
        } finally {
          if (!holding) await this.bestEffort(() => this.store.releaseLock(member.keys.lock, owner));
        }
      }
      if (performance.now() >= deadline) {
        observer.storeLock('timeout');
        // A holder that lives has written a token within its lease, or its lock has lapsed and been taken here.
        this.health.entryProblem('lock-held');
        this.context.logger.warn(
          `No replica shared a token within ${this.timing.waitTimeoutMs} ms (tokenStore.waitTimeoutMs); exchanging locally.`,
        );
        return undefined;
      }
      // Jittered, so waiting replicas do not poll the store in lockstep.
      await delay(pause * (0.5 + Math.random()), undefined, { signal, ref: false }).catch(() => {
        throw signal.reason as Error;
      });
      const polled = await this.readSettled(member);
      if (polled) {
        observer.storeLock('waited');
        this.health.resolved('lock-held');
        return polled;
      }
    }
  }

  /**
   * What the fleet has settled: a usable token (minted by the pair in use, or by the next pair, which a replica that
   * already switched to it shares), or a failure of the pair in use still in its back-off; else `undefined`.
   */
  private async readSettled(member: FleetMember): Promise<Outcome | undefined> {
    for (const keys of member.nextKeys ? [member.keys, member.nextKeys] : [member.keys]) {
      const stored = await this.entries.readToken(keys, this.rejectedTags);
      // A token renewed before the refusal being answered may be refused too (the platform's clock jumped ahead).
      const usable = stored && (!member.answering || stored.after?.includes(member.answering));
      if (usable && member.policy.isFresh(stored.token)) {
        this.tokenNamespace = keys.namespace;
        return { ok: true, token: stored.token, attempts: 0 };
      }
    }
    return this.entries.readFailure(member.keys);
  }

  private async exchangeAndShare(
    member: FleetMember,
    signal: AbortSignal,
    owner: string | undefined,
  ): Promise<Outcome> {
    try {
      const outcome = await member.source.exchange(signal, member.policy);
      if (outcome.ok) await this.share(outcome.token, member);
      // Before the lock is released, so no waiter takes it and tries again meanwhile. Not a refusal of this
      // replica's certificate as not registered: a replica that holds the next pair would be accepted.
      else if (owner && !isNotRegisteredRefusal(outcome.error))
        await this.bestEffort(() =>
          this.entries.writeFailure(member.keys, outcome.error, member.policy.retryAtAfter(outcome)),
        );
      return outcome;
    } finally {
      if (owner) await this.bestEffort(() => this.store.releaseLock(member.keys.lock, owner));
    }
  }

  /** Stores a token this replica obtained under the namespace of the pair that minted it. */
  private async share(token: IssuedToken, member: FleetMember): Promise<void> {
    const minted = await this.namespaces.mintedBy(member.pairs).catch(() => undefined);
    this.tokenNamespace = minted;
    if (minted !== undefined)
      await this.bestEffort(() => this.entries.writeToken(this.keysOf(minted), token, member.after));
  }

  private async tryLock(keys: PairKeys, owner: string): Promise<boolean> {
    try {
      return await this.attempt(() => this.store.acquireLock(keys.lock, owner, this.timing.lockTtlMs));
    } catch (error) {
      this.context.observer.storeLock('error');
      // A lock request that timed out may still be carried out later (a frozen server wakes up): release it then,
      // in order on the same connection, so nobody waits for a lock that nobody holds.
      this.store.releaseLock(keys.lock, owner).catch(() => undefined);
      throw error;
    }
  }

  /** One store operation, bounded by the operation timeout; any failure becomes `StoreUnavailable`. */
  private async attempt<T>(operation: () => Promise<T>): Promise<T> {
    const result = await boundedStoreOperation(operation, this.timing.operationTimeoutMs);
    this.health.answered();
    return result;
  }

  /** Work that helps the fleet but must not fail the caller: skipped while the store is unavailable. */
  private async bestEffort(operation: () => Promise<unknown>): Promise<void> {
    if (!this.health.mayAsk()) return;
    try {
      await operation();
    } catch (error) {
      if (error instanceof StoreUnavailable) this.health.failed(error.problem, error.said);
    }
  }

  /** For `TokenProvider.status().sharedStore`. */
  status(): SharedStoreStatus {
    return this.health.status();
  }

  /** At shutdown: the store is about to close, so nothing more is asked of it (and nothing is logged about it). */
  close(): void {
    this.health.close();
  }
}
