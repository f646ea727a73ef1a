import type { Clock } from '../platform-auth.clock.js';
import { TokenExchangeError } from '../platform-auth.errors.js';
import { backoffError } from './token-backoff.error.js';
import { TokenRefusals } from './token-refusals.js';
import type { TokenState } from './token-status.types.js';

/** An access token as an exchange (or the shared store) hands it over: absolute times, by the local clock. */
export interface IssuedToken {
  readonly accessToken: string;
  readonly tokenType: string;
  /** When the request that obtained it was sent; with `expiresAtMs` it gives the lifetime. */
  readonly issuedAtMs: number;
  readonly expiresAtMs: number;
}

/** What one exchange produced. A failure is a value: its `Retry-After` travels with it into the back-off. */
export type ExchangeOutcome =
  /** `attempts` is 0 for a token another replica obtained (the shared token store). */
  | { readonly ok: true; readonly token: IssuedToken; readonly attempts: number }
  | { readonly ok: false; readonly error: TokenExchangeError; readonly retryAfterMs?: number };

interface CachedToken extends IssuedToken {
  readonly expiresAt: Date;
  /** From here on a background renewal starts. */
  readonly renewAtMs: number;
  /** From here on the token is no longer handed out. */
  readonly unusableAtMs: number;
}

/** One finished exchange, as observers (logging, telemetry, status) see it; never the token itself. */
export interface ExchangeReport {
  readonly ok: boolean;
  readonly startedAtMs: number;
  readonly finishedAtMs: number;
  /** Attempts of a successful exchange; a failure's are on `error`. */
  readonly attempts?: number;
  readonly error?: TokenExchangeError;
  readonly expiresAtMs?: number;
  readonly consecutiveFailures: number;
  /** Until then callers fail fast with `reason: 'backoff'`. */
  readonly retryAtMs?: number;
}

export interface TokenCacheListener {
  exchanged?(report: ExchangeReport): void;
  /** A background renewal failed; the current token is still served until it is unusable. */
  renewalFailed?(error: Error): void;
}

/**
 * The rules a token source needs from the cache, handed to it with every exchange: the shared store decides with
 * them whether another replica's token is fresh enough and how long a failure holds the fleet back, so the cache's
 * formulas are the only ones.
 */
export interface ExchangePolicy {
  /** Whether `token` may be used now: not yet due for renewal by any replica (jitter only delays renewal). */
  isFresh(token: IssuedToken): boolean;
  /** Until when callers fail fast after `failure`, were the exchange to end with it now (`Retry-After` included). */
  retryAtAfter(failure: FailedExchange): number;
}

type FailedExchange = Extract<ExchangeOutcome, { ok: false }>;

/**
 * Where tokens come from: the exchange with the platform, possibly decorated (telemetry, the shared store). The
 * cache calls `exchange` at most once at a time; it rejects only when aborted or on a non-exchange fault.
 */
export interface TokenSource {
  exchange(signal: AbortSignal, policy: ExchangePolicy): Promise<ExchangeOutcome>;
  /** The platform refused `accessToken` (a 401): a source that shares tokens forgets its copy too. */
  refused?(accessToken: string): void;
}

export interface TokenCacheOptions {
  readonly clock: Clock;
  /**
   * Shortest time between the starts of two exchanges. However short `expires_in` is, and however many 401s
   * invalidate the token, exchanges come at most this often: the next one waits, callers share it.
   */
  readonly minExchangeIntervalMs: number;
  readonly refreshBeforeExpirySeconds: number;
  readonly failureBackoffMs: number;
  readonly source: TokenSource;
  /** The application's shutdown: aborts the exchange in flight (its callers get the reason) and refuses new ones. */
  readonly shutdown: AbortSignal;
  readonly listener?: TokenCacheListener;
}

interface FailureState {
  readonly error: TokenExchangeError;
  readonly retryAtMs: number;
  readonly consecutive: number;
}

const MAX_FAILURE_BACKOFF_MS = 30_000;
/** The longest `Retry-After` honoured after an exchange gave up; beyond it the platform is asked again anyway. */
export const MAX_RETRY_AFTER_BACKOFF_MS = 5 * 60_000;
/** Fraction of the renewal lead time used as jitter, so a fleet does not renew in lockstep. */
const RENEWAL_JITTER = 0.1;
/** A token is not handed out in its very last moments, where it would expire in flight. */
const MAX_UNUSABLE_MARGIN_MS = 5_000;

/**
 * The token lifecycle: the current token, the renewal window, the one exchange in flight, the failure back-off and
 * shutdown. It knows nothing of HTTP; `exchange` does the work.
 */
export class TokenCache implements ExchangePolicy {
  private readonly clock: Clock;
  private readonly shutdown: AbortSignal;
  // True private fields: the token must not show when someone logs or inspects the cache or its owner.
  #current?: CachedToken;
  #inflight?: Promise<CachedToken>;
  /** The number of the exchange in flight, once it has started (it may wait out the minimum interval first). */
  private inflightNumber?: number;
  private readonly refusals = new TokenRefusals();
  private failure?: FailureState;
  private lastExchangeStartMs?: number;

  constructor(private readonly options: TokenCacheOptions) {
    this.clock = options.clock;
    this.shutdown = options.shutdown;
    this.shutdown.addEventListener('abort', () => (this.#current = undefined), { once: true });
  }

  /** The token when usable right now; starts a background renewal when it is due. The hot path: keep it cheap. */
  peek(): CachedToken | undefined {
    const token = this.#current;
    if (!token) return undefined;
    const now = this.clock.now();
    if (now >= token.unusableAtMs) return undefined;
    if (now >= token.renewAtMs && !this.#inflight && !this.inBackoff(now)) this.renewInBackground();
    return token;
  }

  /** A usable token: the cached one, the exchange in flight, or a new exchange unless shut down or backing off. */
  get(): Promise<CachedToken> {
    const cached = this.peek();
    if (cached) return Promise.resolve(cached);
    if (this.shutdown.aborted) return Promise.reject(this.shutdown.reason as Error);
    if (this.#inflight) {
      if (!this.refusals.isStale(this.inflightNumber)) return this.#inflight;
      // Started before a refusal, its token may be refused too: the next exchange starts once it is done.
      return this.#inflight.then(
        () => this.get(),
        () => this.get(),
      );
    }
    const failure = this.failure;
    const now = this.clock.now();
    if (failure && now < failure.retryAtMs) return Promise.reject(backoffError(failure.error, failure.retryAtMs - now));
    return this.start();
  }

  /**
   * The platform refused `accessToken`, a token this cache obtained. On its first refusal no token obtained before is
   * handed out again, the current one included even when it replaced `accessToken`: a platform clock that jumped
   * ahead refuses the newest token too. The next one comes from an exchange started from now on (or is shared by a
   * replica that obtained it after a refusal of `accessToken`), for every call refused with `accessToken`.
   * Returns whether the current token was dropped.
   */
  invalidate(accessToken: string): boolean {
    if (!this.refusals.refused(accessToken)) return false;
    this.options.source.refused?.(accessToken);
    const dropped = this.#current !== undefined;
    this.#current = undefined;
    return dropped;
  }

  /** The cached token even when due or unusable, without starting a renewal: for status and gauges. */
  get current(): CachedToken | undefined {
    return this.#current;
  }

  get state(): TokenState {
    if (this.shutdown.aborted) return 'shutdown';
    if (this.#inflight) return 'renewing';
    const now = this.clock.now();
    if (this.#current && now < this.#current.unusableAtMs) return 'valid';
    return this.inBackoff(now) ? 'backoff' : 'none';
  }

  isFresh(token: IssuedToken): boolean {
    return this.clock.now() < token.expiresAtMs - renewalLeadMs(token, this.options.refreshBeforeExpirySeconds);
  }

  /** Doubling per consecutive failure from `failureBackoffMs` (at most 30 s), or `Retry-After` when longer. */
  retryAtAfter(failure: FailedExchange): number {
    const consecutive = (this.failure?.consecutive ?? 0) + 1;
    const backoff = Math.min(MAX_FAILURE_BACKOFF_MS, this.options.failureBackoffMs * 2 ** (consecutive - 1));
    const retryAfter = Math.min(MAX_RETRY_AFTER_BACKOFF_MS, failure.retryAfterMs ?? 0);
    return this.clock.now() + Math.max(backoff, retryAfter);
  }

  private inBackoff(now: number): boolean {
    return this.failure !== undefined && now < this.failure.retryAtMs;
  }

  private renewInBackground(): void {
    this.start().catch((error: unknown) => {
      if (error instanceof TokenExchangeError && error.reason === 'aborted') return;
      this.options.listener?.renewalFailed?.(error as Error);
    });
  }

  private start(): Promise<CachedToken> {
    const signal = this.shutdown;
    this.inflightNumber = undefined;
    const run = (): Promise<CachedToken> => {
      const startedAtMs = this.clock.now();
      this.lastExchangeStartMs = startedAtMs;
      const number = (this.inflightNumber = this.refusals.exchangeStarted());
      return this.options.source.exchange(signal, this).then((outcome) => this.settle(outcome, startedAtMs, number));
    };
    // Usually nothing is left of the minimum interval and the exchange starts at once; otherwise it waits it out.
    const last = this.lastExchangeStartMs;
    const waitMs = last === undefined ? 0 : last + this.options.minExchangeIntervalMs - this.clock.now();
    const exchange = (waitMs > 0 ? this.clock.sleep(waitMs, signal).then(run) : run()).finally(() => {
      if (this.#inflight === exchange) this.#inflight = undefined;
    });
    this.#inflight = exchange;
    return exchange;
  }

  private settle(outcome: ExchangeOutcome, startedAtMs: number, number: number): CachedToken {
    const finishedAtMs = this.clock.now();
    if (outcome.ok) {
      const token = this.cacheable(outcome.token);
      this.refusals.obtained(token.accessToken);
      // Its callers asked before the refusal: they get it, and renew if it meets a 401 too.
      if (!this.refusals.isStale(number)) this.#current = token;
      this.failure = undefined;
      this.report({
        ok: true,
        startedAtMs,
        finishedAtMs,
        attempts: outcome.attempts,
        expiresAtMs: token.expiresAtMs,
        consecutiveFailures: 0,
      });
      return token;
    }
    const consecutive = (this.failure?.consecutive ?? 0) + 1;
    const retryAtMs = this.retryAtAfter(outcome);
    this.failure = { error: outcome.error, consecutive, retryAtMs };
    this.report({
      ok: false,
      startedAtMs,
      finishedAtMs,
      error: outcome.error,
      consecutiveFailures: consecutive,
      retryAtMs,
    });
    throw outcome.error;
  }

  /** Renewal starts `refreshBeforeExpirySeconds` ahead (at most half the lifetime), up to 10 % later by jitter. */
  private cacheable(token: IssuedToken): CachedToken {
    const lifetimeMs = token.expiresAtMs - token.issuedAtMs;
    const leadMs = renewalLeadMs(token, this.options.refreshBeforeExpirySeconds) * (1 - RENEWAL_JITTER * Math.random());
    return {
      accessToken: token.accessToken,
      tokenType: token.tokenType,
      issuedAtMs: token.issuedAtMs,
      expiresAtMs: token.expiresAtMs,
      expiresAt: new Date(token.expiresAtMs),
      renewAtMs: token.expiresAtMs - leadMs,
      unusableAtMs: token.expiresAtMs - Math.min(MAX_UNUSABLE_MARGIN_MS, lifetimeMs / 10),
    };
  }

  private report(report: ExchangeReport): void {
    this.options.listener?.exchanged?.(report);
  }
}

/** How long before expiry renewal is due, before jitter: `refreshBeforeExpirySeconds`, at most half the lifetime. */
function renewalLeadMs(token: IssuedToken, refreshBeforeExpirySeconds: number): number {
  return Math.min(refreshBeforeExpirySeconds * 1000, (token.expiresAtMs - token.issuedAtMs) / 2);
}
