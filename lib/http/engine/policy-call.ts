import { OPEN_GATE } from '../../calls/call-gate.js';
import { isRetriableStatus } from '../../calls/retry.policy.js';
import type { BearerPolicy } from './bearer.policy.js';

/**
 * One call of a promise-based client, as the policy sees it: its facts, and how the client sends it once with a
 * token (redirects followed; `S` is what one send gives), reads what the policy needs from a send, drops a response
 * and makes the caller's answer.
 */
export interface PolicyCall<S, F> {
  readonly method: string;
  /** Whether the retry policy allows re-sending it (`CallRetryPolicy.start`). */
  readonly eligible: boolean;
  /** What ends the call's waits (the gate's turn, a re-send's delay); read only when it waits. */
  readonly signal: AbortSignal | undefined;
  /** The URL as an error may show it: no query string. */
  url(): string;
  send(token: string): Promise<S>;
  status(sent: S): number;
  /** A 401 the token is to blame for (it carried the token, from an allowed origin, with a body sent again). */
  renewable(sent: S): boolean;
  retryAfter(sent: S): unknown;
  discard(sent: S): unknown;
  finish(sent: S): F;
  /** What the caller gets when its signal aborted the wait before a re-send: what the client throws for an abort. */
  aborted(reason: unknown): unknown;
}

/**
 * One call of a promise-based client (axios through the adapter, `PlatformFetch`), from its first send to the answer
 * the caller gets: each send waits at the gate; a 401 the token is to blame for gets one renewal and one re-send
 * (counted in no retry limit); a transient failure is re-sent as the retry policy says, after its delay on the
 * integration's clock. A first answer that asks for none of that becomes the caller's in one step: no async function
 * runs, so the answer reaches the caller as soon as the client gives it.
 */
export function runCall<S, F>(policy: BearerPolicy, call: PolicyCall<S, F>, first: string): Promise<F> {
  const sending = sendAtTurn(policy, call, first);
  return sending.then(
    (sent) =>
      call.renewable(sent) || isRetriableStatus(call.status(sent))
        ? continueCall(policy, call, first, sending)
        : call.finish(sent),
    () => continueCall(policy, call, first, sending),
  );
}

/**
 * The call from its first send (`firstSend`, settled), with every renewal and re-send its answers ask for. A client
 * that made its first send itself (`PlatformFetch`'s usual call) hands the rest of the call here.
 */
export async function continueCall<S, F>(
  policy: BearerPolicy,
  call: PolicyCall<S, F>,
  first: string,
  firstSend: Promise<S>,
): Promise<F> {
  let token = first;
  let renewed = false;
  for (let attempt = 1; ; attempt += 1) {
    let sent: S;
    try {
      sent = await (attempt === 1 ? firstSend : sendAtTurn(policy, call, token));
      if (!renewed && call.renewable(sent)) {
        renewed = true;
        await call.discard(sent);
        const again = await policy.renew(token, (fresh) => resendWith(policy, call, fresh));
        token = again.token;
        sent = again.sent;
      }
    } catch (error) {
      const delay = call.eligible ? policy.retry.afterFailure(error, attempt, call.signal) : undefined;
      if (delay === undefined) throw error;
      await waitOrAbort(policy, call, delay);
      continue;
    }
    const status = call.status(sent);
    if (!isRetriableStatus(status)) return call.finish(sent);
    let delay: number | undefined;
    try {
      delay = policy.retry.afterAnswer(status, call.retryAfter(sent), attempt, {
        eligible: call.eligible,
        gate: policy.gate,
        method: call.method,
        url: call.url(),
      });
    } catch (error) {
      await call.discard(sent);
      throw error;
    }
    if (delay === undefined) return call.finish(sent);
    await call.discard(sent);
    await waitOrAbort(policy, call, delay);
  }
}

/**
 * One send with `token`, after the gate's turn when the gate is not open. The call's signal is read only then: a
 * client may make it on demand.
 */
function sendAtTurn<S, F>(policy: BearerPolicy, call: PolicyCall<S, F>, token: string): Promise<S> {
  if (policy.gate === OPEN_GATE) return call.send(token);
  return policy.gate.acquire(call.signal).then(() => call.send(token));
}

/** The wait before a re-send: the caller's abort ends it as the client ends an aborted request; a shutdown, as itself. */
async function waitOrAbort<S, F>(policy: BearerPolicy, call: PolicyCall<S, F>, delayMs: number): Promise<void> {
  const signal = call.signal;
  try {
    await policy.retry.wait(delayMs, signal);
  } catch (reason) {
    throw signal?.aborted ? call.aborted(reason) : reason;
  }
}

/** The re-send after a 401 with `fresh`, and its status for the observer's span. */
async function resendWith<S, F>(
  policy: BearerPolicy,
  call: PolicyCall<S, F>,
  fresh: string,
): Promise<{ status: number; sent: S; token: string }> {
  const sent = await sendAtTurn(policy, call, fresh);
  return { status: call.status(sent), sent, token: fresh };
}
