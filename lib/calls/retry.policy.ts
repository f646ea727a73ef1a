import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform-auth.clock.js';
import { PlatformAuthError } from '../platform-auth.errors.js';
import type { RetryObserver, RetryReason } from '../platform-auth.observer.js';
import type { CallRetrySettings, IdempotencyKeySettings } from '../options/calls.resolver.js';
import { parseRetryAfter } from '../token/retry-after.util.js';
import type { CallGate } from './call-gate.js';
import { PlatformUnavailableError } from './calls.errors.js';
import { RetryBudget } from './retry.budget.js';
import { eitherSignal } from '../util/abort.util.js';
import { equalJitterMs } from '../util/backoff.util.js';
import { isTransientAnswer } from '../util/transient.rules.js';

/** Methods whose repetition changes nothing more than the first send did (RFC 9110 §9.2.2), so a re-send is safe. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Methods a caller's own idempotency key makes re-sendable, whether or not the library keys them. */
const KEYED_BY_CALLER = new Set(['POST', 'PATCH']);

/** Codes of a connection that failed before any response: nothing of the request can have been acted on twice. */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const REASONS: Readonly<Record<number, RetryReason>> = {
  429: 'rate_limited',
  502: 'bad_gateway',
  503: 'unavailable',
  504: 'gateway_timeout',
};

/** An answer a re-send may fix: 429 (with `Retry-After`, see `afterAnswer`), 502, 503, 504, as `isTransientAnswer` decides. */
export function isRetriableStatus(status: number): boolean {
  return isTransientAnswer(status, 'calls');
}

/**
 * The retry policy of calls to the platform's APIs, decided here once for every client: which calls may be re-sent,
 * after which answers, how long to wait, and whether the integration's retry budget has a re-send left. The clients
 * only send, read, drop and wait. A failed token exchange never reaches it (the exchange has its own policy), and the
 * one re-send after a 401 is the bearer policy's, counted neither in `maxAttempts` nor in the budget.
 */
export class CallRetryPolicy {
  private readonly budget: RetryBudget;
  private exhausted = false;

  constructor(
    private readonly settings: CallRetrySettings,
    private readonly idempotency: IdempotencyKeySettings,
    private readonly clock: Clock,
    private readonly observer: RetryObserver,
    /** The integration's shutdown: it ends every wait before a re-send, with the shutdown error. */
    private readonly shutdown?: AbortSignal,
  ) {
    this.budget = new RetryBudget(settings.budgetPercent, settings.budgetMinPerMinute, clock);
  }

  /**
   * The idempotency key's header (lower case) for calls of `method` (any case), or `undefined` when no key counts for
   * them: the methods that get a key (`idempotencyKey.methods`), and POST and PATCH, whose caller's own key in that
   * header makes them re-sendable like one the library keyed.
   */
  keyHeader(method: string): string | undefined {
    const upper = method.toUpperCase();
    return this.idempotency.methods.has(upper) || KEYED_BY_CALLER.has(upper) ? this.idempotency.header : undefined;
  }

  /**
   * A new key for a call of `method` that carries none of its caller's: one per call, kept on its every re-send;
   * `undefined` when its method gets none (a caller's own key is never replaced, and never joined by a second).
   */
  newKey(method: string): string | undefined {
    return this.idempotency.methods.has(method.toUpperCase()) ? randomUUID() : undefined;
  }

  /** Counts a call (its first send) into the budget: every call does, once. */
  countCall(): void {
    this.budget.countCall();
  }

  /**
   * Whether a call may be re-sent at all: not when the caller said `retry: false` or its body cannot be sent again;
   * GET, HEAD, OPTIONS, PUT and DELETE may, other methods only with an idempotency key, the library's or the
   * caller's own (`carriesKey`). Asked only once something failed, so a call that succeeds pays nothing for it.
   */
  allows(method: string, carriesKey: boolean, optedOut: boolean, replayable: boolean): boolean {
    if (optedOut || !replayable || this.settings.maxAttempts < 2) return false;
    return IDEMPOTENT.has(method) || carriesKey;
  }

  /**
   * After a retriable status (`isRetriableStatus`) answered send number `attempt` of a call: a 429 or 503 with
   * `Retry-After` holds `gate` until then, whatever the call, but never longer than `maxDelayMs` (one answer must not
   * stop the fleet for longer than any call would wait for it); for a call `start` allowed to be re-sent, the delay
   * before the next send, or `undefined` when this answer goes to the caller. A 429 without `Retry-After` is not
   * re-sent: only the platform knows when it takes calls again. The clients give no `Retry-After` of an answer from
   * outside the allowed origins: a foreign server neither holds the gate nor sets the delay.
   * @throws PlatformUnavailableError when `Retry-After` is longer than `maxDelayMs`.
   */
  afterAnswer(
    status: number,
    retryAfter: unknown,
    attempt: number,
    call: { readonly eligible: boolean; readonly gate: CallGate; readonly method: string; readonly url: string },
  ): number | undefined {
    const now = this.clock.now();
    const retryAfterMs = parseRetryAfter(retryAfter, now);
    if (retryAfterMs !== undefined && (status === 429 || status === 503))
      call.gate.holdUntil(now + Math.min(retryAfterMs, this.settings.maxDelayMs));
    if (!call.eligible || attempt >= this.settings.maxAttempts || (status === 429 && retryAfterMs === undefined))
      return undefined;
    if (retryAfterMs !== undefined && retryAfterMs > this.settings.maxDelayMs) {
      const { method, url } = call;
      throw new PlatformUnavailableError(status, method, url, retryAfterMs, this.settings.maxDelayMs, now);
    }
    return this.resend(REASONS[status], attempt, retryAfterMs);
  }

  /**
   * After send number `attempt` of a call `start` allowed to be re-sent failed without an answer: the delay before
   * the next send, or `undefined` when the error goes to the caller (not a connection failure, or aborted).
   */
  afterFailure(error: unknown, attempt: number, signal: AbortSignal | undefined): number | undefined {
    if (attempt >= this.settings.maxAttempts || signal?.aborted === true || !isConnectionFailure(error))
      return undefined;
    return this.resend('connection_failed', attempt, undefined);
  }

  /**
   * Waits `ms` on the integration's clock; rejects with the signal's reason when the caller aborts meanwhile, or
   * with the shutdown error when the integration shuts down.
   */
  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return this.clock.sleep(ms, eitherSignal(signal, this.shutdown));
  }

  private resend(reason: RetryReason, attempt: number, retryAfterMs: number | undefined): number | undefined {
    if (!this.budget.tryResend()) {
      if (!this.exhausted) this.observer.retryBudgetExhausted();
      this.exhausted = true;
      return undefined;
    }
    this.exhausted = false;
    this.observer.retried(reason, attempt);
    return retryAfterMs ?? equalJitterMs(attempt, this.settings.baseDelayMs, this.settings.maxDelayMs);
  }
}

/**
 * A connection failure before any response, found on the error or its causes (fetch wraps undici's in a TypeError).
 * None of the module's own errors is one, whatever its cause: a failed token exchange is never re-sent by this policy.
 */
function isConnectionFailure(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth += 1) {
    const { code, cause, response } = e as { code?: unknown; cause?: unknown; response?: unknown };
    if (response !== undefined || e instanceof PlatformAuthError) return false;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    e = cause;
  }
  return false;
}
