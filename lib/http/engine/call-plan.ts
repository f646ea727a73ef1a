import { OPEN_GATE } from '../../calls/call-gate.js';
import { isRetriableStatus } from '../../calls/retry.policy.js';
import type { BearerPolicy } from './bearer.policy.js';

/** What a call does after an answer or a failure: hand it to the caller, renew the token, re-send, or fail. */
export type CallStep = typeof FINISH | typeof RENEW | { readonly resendAfterMs: number } | { readonly fail: unknown };

/** The answer goes to the caller as it is. */
export const FINISH = 'finish';

/** The answer is dropped; the token is renewed (once per call) and the call sent again with the fresh one. */
export const RENEW = 'renew';

/** A call as the plan reads it, from the client that sends it; each fact is read only when a decision needs it. */
export interface CallFacts {
  /** The method, upper case. */
  readonly method: string;
  /** The caller turned re-sends off for this call (`retry: false`, the undici opt-out header). */
  readonly optedOut: boolean;
  /** What it sends as its body: a stream or an async iterable cannot be sent again. */
  readonly body: unknown;
  /** The URL as an error may show it: no query string. */
  url(): string;
}

/**
 * Whether an answer with `status` needs the plan at all: anything but a 401 or a retriable status goes to the
 * caller as it is, so a client's fast path asks only this.
 */
export function asksPlan(status: number): boolean {
  return status === 401 || isRetriableStatus(status);
}

/**
 * The wait for the gate's turn before a send, or `undefined` when the gate is open (no promise on the hot path).
 * Every send of every client waits here, the first, a re-send and the one after a renewal alike.
 */
export function gateTurn(
  policy: BearerPolicy,
  call: { readonly signal: AbortSignal | undefined },
): Promise<void> | undefined {
  // The call's signal is read only when it waits: a client may make it on demand.
  return policy.gate === OPEN_GATE ? undefined : policy.gate.acquire(call.signal);
}

/**
 * The decisions of one call, for every client: which idempotency key it carries, which answer earns the one
 * renewal after a 401, which answer or failure is re-sent and after how long. The client sends one hop (following
 * redirects as the redirect rules say), reports what came back (`onAnswer`, `onError`) and does the step it is given;
 * a promise loop (`policy-call.ts`) and undici's callbacks (`undici.interceptor.ts`) drive the same plan.
 */
export class CallPlan {
  /** The header and value of the key the library adds to the call, kept for each re-send; `undefined`: none. */
  readonly key: { readonly header: string; readonly value: string } | undefined;
  private readonly carriesKey: boolean;
  private attempt = 1;
  private renewed = false;

  /**
   * @param ownKey whether the caller's request already carries a header (the caller's own key, never replaced).
   * @param keyHeader the key's header for the call's method, when the client already asked the retry policy.
   */
  constructor(
    private readonly policy: BearerPolicy,
    private readonly call: CallFacts,
    ownKey: (header: string) => boolean,
    keyHeader = policy.retry.keyHeader(call.method),
  ) {
    const own = keyHeader !== undefined && ownKey(keyHeader);
    const value = keyHeader === undefined || own ? undefined : policy.retry.newKey(call.method);
    this.key = value === undefined ? undefined : { header: keyHeader!, value };
    this.carriesKey = own || value !== undefined;
  }

  /**
   * After an answer with `status`. `carried`: the hop that answered carried the token (a chain that left the allowed
   * origins sends it to none after that, so a 401 from there is not the token's fault). `retryAfter` reads the
   * answer's `Retry-After`, asked for a retriable status only; a client gives none of an answer from outside the
   * allowed origins. Drop the answer for any step but `FINISH`.
   */
  onAnswer(status: number, carried: boolean, retryAfter: () => unknown): CallStep {
    const { policy, call } = this;
    if (status === 401 && !this.renewed && carried && policy.isReplayable(call.body)) {
      this.renewed = true;
      return RENEW;
    }
    if (!isRetriableStatus(status)) return FINISH;
    let delayMs: number | undefined;
    try {
      delayMs = policy.retry.afterAnswer(status, retryAfter(), this.attempt, {
        eligible: this.eligible(),
        gate: policy.gate,
        method: call.method,
        url: call.url(),
      });
    } catch (error) {
      return { fail: error };
    }
    if (delayMs === undefined) return FINISH;
    this.attempt += 1;
    return { resendAfterMs: delayMs };
  }

  /**
   * After a send failed without an answer (a connection failure, the renewal's exchange, an abort): a re-send after
   * a delay, or the failure for the caller. `signal`: the caller's, when the client has one.
   */
  onError(error: unknown, signal: AbortSignal | undefined): CallStep {
    const delayMs = this.eligible() ? this.policy.retry.afterFailure(error, this.attempt, signal) : undefined;
    if (delayMs === undefined) return { fail: error };
    this.attempt += 1;
    return { resendAfterMs: delayMs };
  }

  /** Whether the retry policy allows re-sending this call; asked only once something failed. */
  private eligible(): boolean {
    const { policy, call } = this;
    return policy.retry.allows(call.method, this.carriesKey, call.optedOut, policy.isReplayable(call.body));
  }
}
