import type { BearerPolicy } from '../engine/bearer.policy.js';
import { CallPlan, type CallFacts } from '../engine/call-plan.js';
import type { PolicyCall } from '../engine/policy-call.js';
import type { Answers, Followed } from '../engine/redirect-follow.js';
import { hasHeader, withHeader } from './fetch-headers.util.js';
import type { PlatformFetchInit } from './platform-fetch.js';

type Follow = (start: URL | string, init: RequestInit, token: string) => Promise<Followed<Response>>;

/**
 * One call of `PlatformFetch.fetch`, as the policy sees it; the caller has counted it into the retry budget. Its
 * idempotency key is added to a copy of `init` once, so every re-send carries the same one; the caller's `init` is
 * never changed (it is often a shared constant).
 */
export class FetchCall implements PolicyCall<Response, Response>, CallFacts {
  readonly plan: CallPlan;
  readonly answers = FETCH_ANSWERS;
  private readonly init: PlatformFetchInit;

  constructor(
    policy: BearerPolicy,
    private readonly start: URL | string,
    init: PlatformFetchInit,
    private readonly follow: Follow,
  ) {
    this.init = init;
    this.plan = new CallPlan(policy, this, (header) => hasHeader(init.headers, header));
    const key = this.plan.key;
    if (key !== undefined) this.init = { ...init, headers: withHeader(init.headers, key.header, key.value) };
  }

  get method(): string {
    return (this.init.method ?? 'GET').toUpperCase();
  }

  get optedOut(): boolean {
    return this.init.retry === false;
  }

  get body(): unknown {
    return this.init.body;
  }

  get signal(): AbortSignal | undefined {
    return this.init.signal ?? undefined;
  }

  url(): string {
    const start = typeof this.start === 'string' ? new URL(this.start) : this.start;
    return `${start.origin}${start.pathname}`;
  }

  send(token: string): Promise<Followed<Response>> {
    return this.follow(this.start, this.init, token);
  }

  finish(response: Response): Response {
    return response;
  }

  /** What fetch rejects with for an aborted request: the signal's reason. */
  aborted(reason: unknown): unknown {
    return reason;
  }
}

/** A fetch `Response` as the engine reads it. */
export const FETCH_ANSWERS: Answers<Response> = {
  status: (response) => response.status,
  header: (response, name) => response.headers.get(name) ?? undefined,
  discard: discardBody,
};

/**
 * Cancels the body of a response nobody reads, without waiting: a body teed by whatever wraps `fetch` (MSW, a
 * capturing debug proxy) settles its cancel only once every branch is cancelled, which may be never, and the call
 * would wait on it for good.
 */
export function discardBody(response: Response): void {
  response.body?.cancel().catch(() => undefined);
}
