import { isRetriableStatus } from '../../calls/retry.policy.js';
import type { BearerPolicy } from './bearer.policy.js';

/** One send of a call, as the client made it: redirects followed, the response not yet read. */
export interface Sent<R> {
  readonly response: R;
  readonly status: number;
  /** A 401 the token is to blame for (it carried the token, from an allowed origin, with a body sent again). */
  readonly renewable: boolean;
}

/**
 * One call of a promise-based client, as the policy sees it: its facts, and how the client sends it once with a
 * token, reads `Retry-After`, drops a response and makes the caller's answer.
 */
export interface PolicyCall<R, F> {
  readonly method: string;
  /** Whether the retry policy allows re-sending it (`CallRetryPolicy.start`). */
  readonly eligible: boolean;
  readonly signal: AbortSignal | undefined;
  /** The URL as an error may show it: no query string. */
  url(): string;
  send(token: string): Promise<Sent<R>>;
  retryAfter(response: R): unknown;
  discard(response: R): unknown;
  finish(response: R): F;
}

/**
 * One call of a promise-based client (axios through the adapter, `PlatformFetch`), from its first send to the answer
 * the caller gets: each send waits at the gate; a 401 the token is to blame for gets one renewal and one re-send
 * (counted in no retry limit); a transient failure is re-sent as the retry policy says, after its delay on the
 * integration's clock. With nothing to retry it costs no promise beyond the sends.
 */
export async function runCall<R, F>(policy: BearerPolicy, call: PolicyCall<R, F>, first: string): Promise<F> {
  let token = first;
  let renewed = false;
  for (let attempt = 1; ; attempt += 1) {
    let sent: Sent<R>;
    try {
      const turn = policy.acquire(call.signal);
      if (turn) await turn;
      sent = await call.send(token);
      if (sent.renewable && !renewed) {
        renewed = true;
        await call.discard(sent.response);
        sent = await policy.renew(token, async (fresh) => {
          token = fresh;
          const again = policy.acquire(call.signal);
          if (again) await again;
          return call.send(fresh);
        });
      }
    } catch (error) {
      const delay = call.eligible ? policy.retry.afterFailure(error, attempt, call.signal) : undefined;
      if (delay === undefined) throw error;
      await policy.retry.wait(delay, call.signal);
      continue;
    }
    if (!isRetriableStatus(sent.status)) return call.finish(sent.response);
    let delay: number | undefined;
    try {
      delay = policy.retry.afterAnswer(sent.status, call.retryAfter(sent.response), attempt, {
        eligible: call.eligible,
        gate: policy.gate,
        method: call.method,
        url: call.url(),
      });
    } catch (error) {
      await call.discard(sent.response);
      throw error;
    }
    if (delay === undefined) return call.finish(sent.response);
    await call.discard(sent.response);
    await policy.retry.wait(delay, call.signal);
  }
}
