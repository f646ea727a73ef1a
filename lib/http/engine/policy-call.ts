import type { BearerPolicy } from './bearer.policy.js';
import { asksPlan, FINISH, gateTurn, RENEW, type CallPlan, type CallStep } from './call-plan.js';
import type { Answers, Followed } from './redirect-follow.js';

/**
 * One call of a promise-based client, as the engine drives it: its plan, how the client sends it once with a token
 * (redirects followed), reads and drops a response (`answers`) and makes the caller's answer.
 */
export interface PolicyCall<Res, F> {
  readonly plan: CallPlan;
  readonly answers: Answers<Res>;
  /** What ends the call's waits (the gate's turn, a re-send's delay); read only when it waits. */
  readonly signal: AbortSignal | undefined;
  send(token: string): Promise<Followed<Res>>;
  finish(response: Res): F;
  /** What the caller gets when its signal aborted the wait before a re-send: what the client throws for an abort. */
  aborted(reason: unknown): unknown;
}

/**
 * One call of a promise-based client (axios through the adapter, `PlatformFetch`), from its first send to the answer
 * the caller gets, each step as its plan says. A first answer that asks for nothing more becomes the caller's in one
 * step: no async function runs, so the answer reaches the caller as soon as the client gives it.
 */
export function runCall<Res, F>(policy: BearerPolicy, call: PolicyCall<Res, F>, first: string): Promise<F> {
  return continueCall(policy, call, first, sendAtTurn(policy, call, first));
}

/**
 * The call from its first send (`firstSend`): a client that made its first send itself (`PlatformFetch`'s usual
 * call) hands the rest of the call here.
 */
export function continueCall<Res, F>(
  policy: BearerPolicy,
  call: PolicyCall<Res, F>,
  first: string,
  firstSend: Promise<Followed<Res>>,
): Promise<F> {
  return firstSend.then(
    (sent) =>
      asksPlan(call.answers.status(sent.response))
        ? drive(policy, call, first, sent, answered(call, sent))
        : call.finish(sent.response),
    (error: unknown) => drive(policy, call, first, undefined, call.plan.onError(error, call.signal)),
  );
}

/** Every step from the first answer (`firstSent`, `undefined` after a failure) until the call ends. */
async function drive<Res, F>(
  policy: BearerPolicy,
  call: PolicyCall<Res, F>,
  first: string,
  firstSent: Followed<Res> | undefined,
  firstStep: CallStep,
): Promise<F> {
  let token = first;
  let sent = firstSent;
  for (let step = firstStep; ;) {
    if (step === FINISH) return call.finish((sent as Followed<Res>).response);
    if (sent !== undefined) call.answers.discard(sent.response);
    if (typeof step === 'object' && 'fail' in step) throw step.fail;
    if (step !== RENEW) await waitOrAbort(policy, call, step.resendAfterMs);
    try {
      if (step === RENEW) {
        const again = await policy.renew(token, async (fresh) => {
          token = fresh;
          const resent = await sendAtTurn(policy, call, fresh);
          return { status: call.answers.status(resent.response), resent };
        });
        sent = again.resent;
      } else sent = await sendAtTurn(policy, call, token);
      step = answered(call, sent);
    } catch (error) {
      sent = undefined;
      step = call.plan.onError(error, call.signal);
    }
  }
}

/**
 * What the plan makes of the answer `sent`. Its `Retry-After` counts from a hop that carried the token only: a chain
 * that left the allowed origins holds nothing of ours.
 */
function answered<Res, F>(call: PolicyCall<Res, F>, sent: Followed<Res>): CallStep {
  const { answers } = call;
  const { response, carried } = sent;
  return call.plan.onAnswer(answers.status(response), carried, () =>
    carried ? answers.header(response, 'retry-after') : undefined,
  );
}

/** One send with `token`, after the gate's turn. */
function sendAtTurn<Res, F>(policy: BearerPolicy, call: PolicyCall<Res, F>, token: string): Promise<Followed<Res>> {
  const turn = gateTurn(policy, call);
  return turn === undefined ? call.send(token) : turn.then(() => call.send(token));
}

/** The wait before a re-send: the caller's abort ends it as the client ends an aborted request; a shutdown, as itself. */
async function waitOrAbort<Res, F>(policy: BearerPolicy, call: PolicyCall<Res, F>, delayMs: number): Promise<void> {
  const signal = call.signal;
  try {
    await policy.retry.wait(delayMs, signal);
  } catch (reason) {
    throw signal?.aborted ? call.aborted(reason) : reason;
  }
}
