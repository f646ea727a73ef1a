import type { BearerPolicy } from '../engine/bearer.policy.js';
import { CallPlan, type CallFacts } from '../engine/call-plan.js';
import type { PolicyCall } from '../engine/policy-call.js';
import { hasHeader, withHeader } from './fetch-headers.util.js';
import type { FetchSent, PlatformFetchInit } from './platform-fetch.js';

type Follow = (start: URL | string, init: RequestInit, token: string) => Promise<FetchSent>;

/**
 * One call of `PlatformFetch.fetch`, as the policy sees it; the caller has counted it into the retry budget. Its
 * idempotency key is added to a copy of `init` once, so every re-send carries the same one; the caller's `init` is
 * never changed (it is often a shared constant).
 */
export class FetchCall implements PolicyCall<FetchSent, Response>, CallFacts {
  readonly plan: CallPlan;
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

  send(token: string): Promise<FetchSent> {
    return this.follow(this.start, this.init, token);
  }

  status({ response }: FetchSent): number {
    return response.status;
  }

  /** A chain that left the allowed origins sends the token to none after that. */
  carried({ carried }: FetchSent): boolean {
    return carried;
  }

  /** `Retry-After` of an answer to a hop that carried the token only: a chain that left holds nothing of ours. */
  retryAfter({ response, carried }: FetchSent): unknown {
    if (!carried) return undefined;
    return response.headers.get('retry-after') ?? undefined;
  }

  discard({ response }: FetchSent): void {
    discardBody(response);
  }

  finish({ response }: FetchSent): Response {
    return response;
  }

  /** What fetch rejects with for an aborted request: the signal's reason. */
  aborted(reason: unknown): unknown {
    return reason;
  }
}

/**
 * Cancels the body of a response nobody reads, without waiting: a body teed by whatever wraps `fetch` (MSW, a
 * capturing debug proxy) settles its cancel only once every branch is cancelled, which may be never, and the call
 * would wait on it for good.
 */
export function discardBody(response: Response): void {
  response.body?.cancel().catch(() => undefined);
}
