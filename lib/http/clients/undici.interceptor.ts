import type { BearerPolicy } from '../engine/bearer.policy.js';
import { asksPlan, CallPlan, FINISH, gateTurn, RENEW, type CallFacts, type CallStep } from '../engine/call-plan.js';
import { AdmittedHandler, asLegacy, type Handler, type LegacyHandler } from './undici-handlers.js';
import { ForeignHopHandler, guardedRedirect } from './undici-redirect-guard.js';
import {
  findHeaders,
  headerValue,
  rawHeaderValue,
  withHeader,
  withoutHeader,
  type DispatchHeaders,
  type RawHeaders,
} from './undici-headers.util.js';

/**
 * undici's `Dispatcher`, as the global `RequestInit['dispatcher']` names it (the `undici-types` that `@types/node`
 * brings): no import of the optional peer in the declarations. An app compiled with the DOM library (TypeScript's
 * default when `lib` is not set, as in the Nest CLI's tsconfig) sees the DOM's `RequestInit`, which has no
 * `dispatcher`: there it is `any`, as it was when this type was an error hidden by `skipLibCheck`, so that these
 * declarations compile with `skipLibCheck: false` too and an app's `request(url, { dispatcher })` keeps compiling.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the DOM's RequestInit names no dispatcher type
export type PlatformDispatcher = RequestInit extends { dispatcher?: infer D } ? NonNullable<D> : any;

/** An interceptor for undici's `Dispatcher.compose`. */
export type PlatformInterceptor = (dispatch: PlatformDispatcher['dispatch']) => PlatformDispatcher['dispatch'];

/**
 * A request header the undici interceptor reads and removes before sending: `x-platform-auth-retry: false` turns
 * the retry policy off for that request, as `retry: false` does for `PlatformFetch.fetch` and axios. A header,
 * because a client that takes a dispatcher (global `fetch`, openapi-fetch, ky) passes headers and nothing else.
 */
export const PLATFORM_AUTH_RETRY_HEADER = 'x-platform-auth-retry';

export interface DispatchOptions {
  origin?: string | URL;
  path?: string;
  method: string;
  headers?: DispatchHeaders;
  body?: unknown;
}

/** A dispatch function that takes a handler of either kind: an `Agent`'s does, and so does `compose`'s `next`. */
export type AnyDispatch = (options: DispatchOptions, handler: Handler | LegacyHandler) => boolean;

/**
 * The bearer rules as an undici interceptor: the token on requests to allowed origins that carry no `Authorization`
 * of their own, after a 401 one re-send with a fresh token, and re-sends after transient failures as the retry
 * policy says, for a body undici can send again. A client that follows redirects (undici's redirect interceptor,
 * global `fetch`) asks for each hop as a request of its own: a redirect that would lead it back to an allowed origin
 * after its chain left them reaches it without its `Location` (`guardedRedirect`), so no hop after leaving gets the
 * token.
 */
export function bearerInterceptor(policy: BearerPolicy): PlatformInterceptor {
  const interceptor = (next: AnyDispatch) => bearerDispatch(policy, next);
  return interceptor as unknown as PlatformInterceptor;
}

/**
 * The bearer rules in front of `next`, for a handler of either kind: the library's own dispatcher calls it with
 * `Agent.prototype.dispatch`, and `compose` through `bearerInterceptor`. Requests that get no token go to `next`
 * with their handler untouched.
 */
export function bearerDispatch(policy: BearerPolicy, next: AnyDispatch): AnyDispatch {
  const dispatch = bearerRules(policy, next);
  return (options, handler) => {
    const admission = policy.admission;
    if (admission === undefined) return dispatch(options, handler);
    const legacy = asLegacy(handler);
    const refused = admission.enter();
    if (refused === undefined) return dispatch(options, new AdmittedHandler(admission, legacy));
    legacy.onError?.(refused);
    return true;
  };
}

/** The bearer rules alone, for a dispatch the admission (if any) let in. */
function bearerRules(policy: BearerPolicy, next: AnyDispatch): AnyDispatch {
  return (options, handler) => {
    if (!policy.isAllowedOrigin(options.origin))
      return next(options, new ForeignHopHandler(policy, options, asLegacy(handler)));
    const keyHeader = policy.retry.keyHeader(options.method);
    const found = findHeaders(options.headers, 'authorization', PLATFORM_AUTH_RETRY_HEADER, keyHeader);
    if (found & HAS_AUTHORIZATION) return next(options, handler);
    const call = new BearerCall(policy, next, options, asLegacy(handler), found, keyHeader);
    const token = policy.peekToken();
    if (token !== undefined) return call.send(token);
    policy.token().then(
      (fresh) => call.send(fresh),
      (error: Error) => call.fail(error),
    );
    return true;
  };
}

/** `findHeaders`'s bits for `Authorization`, the retry opt-out header and the idempotency key header. */
const HAS_AUTHORIZATION = 1;
const HAS_OPT_OUT = 2;
const HAS_KEY = 4;

/**
 * One call through the interceptor, in undici's older handler kind both ways. The handler downstream sees one
 * request and one response: a response dropped for a re-send (a 401, a transient failure) is read to its end, and
 * the abort it was given reaches whichever attempt is current, or stops the next one.
 */
class BearerCall implements LegacyHandler, CallFacts {
  private readonly options: DispatchOptions;
  readonly optedOut: boolean;
  /** No signal of the caller's: undici's abort reaches the call through `onConnect`. */
  readonly signal = undefined;
  private readonly plan: CallPlan;
  // Every field is set in the constructor, even to `undefined`: one shape for every call, from start to end.
  private abortCurrent: ((reason?: Error) => void) | undefined = undefined;
  private abortedWith: Error | undefined = undefined;
  private started = false;
  private forwarded = false;
  /** What becomes of a response the handler downstream does not see: read to its end, then this step. */
  private dropped: CallStep | undefined = undefined;
  private sent = '';
  /** Settles the observer's `reauthenticate` when the re-sent attempt answers. */
  private answered: { resolve(value: { status: number }): void; reject(error: Error): void } | undefined = undefined;

  constructor(
    private readonly policy: BearerPolicy,
    private readonly next: AnyDispatch,
    options: DispatchOptions,
    private readonly handler: LegacyHandler,
    /** `findHeaders`'s answer for the caller's headers. */
    found: number,
    keyHeader: string | undefined,
  ) {
    policy.retry.countCall();
    let headers = options.headers;
    const optOut = found & HAS_OPT_OUT ? headerValue(headers, PLATFORM_AUTH_RETRY_HEADER) : undefined;
    if (found & HAS_OPT_OUT) headers = withoutHeader(headers, PLATFORM_AUTH_RETRY_HEADER);
    this.options = options;
    this.optedOut = String(optOut) === 'false';
    this.plan = new CallPlan(policy, this, () => (found & HAS_KEY) !== 0, keyHeader);
    const key = this.plan.key;
    if (key !== undefined) headers = withHeader(headers, key.header, key.value);
    if (headers !== options.headers) this.options = { ...options, headers };
  }

  get method(): string {
    return this.options.method.toUpperCase();
  }

  get body(): unknown {
    return this.options.body;
  }

  url(): string {
    const { origin, path } = this.options;
    return `${String(origin)}${(path ?? '').split('?', 1)[0]}`;
  }

  /** Sends with `token` after the gate's turn; `true` while a turn is awaited, as undici's dispatch returns. */
  send(token: string): boolean {
    this.sent = token;
    const turn = gateTurn(this.policy, this);
    if (turn === undefined) return this.dispatch();
    turn.then(
      () => this.dispatch(),
      (error: Error) => this.fail(error),
    );
    return true;
  }

  /** The call ends with `error`: through `renew` when a re-send after a 401 waits for its answer. */
  fail(error: Error): void {
    const answered = this.answered;
    this.answered = undefined;
    if (answered) answered.reject(error);
    else this.handler.onError?.(error);
  }

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.abortCurrent = abort;
    if (this.started) return;
    this.started = true;
    this.handler.onConnect?.(this.abort, context);
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onUpgrade(statusCode: number, rawHeaders: RawHeaders, socket: unknown): void {
    this.handler.onUpgrade?.(statusCode, rawHeaders, socket);
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void, statusText?: string): boolean | void {
    // A plain answer is forwarded without asking the plan.
    if (!asksPlan(statusCode)) this.dropped = undefined;
    else {
      // The dispatch went to an allowed origin (`bearerDispatch`) with the token: the answer is from a hop that carried it.
      const step = this.plan.onAnswer(statusCode, true, () => rawHeaderValue(rawHeaders, 'retry-after'));
      this.dropped = step === FINISH ? undefined : step;
      if (this.dropped) return true;
    }
    this.forwarded = true;
    this.answered?.resolve({ status: statusCode });
    this.answered = undefined;
    const headers = guardedRedirect(this.policy, statusCode, rawHeaders, this.options, true);
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText);
  }

  onData(chunk: Buffer): boolean | void {
    return this.dropped ? true : this.handler.onData?.(chunk);
  }

  onComplete(rawTrailers: RawHeaders | null): void {
    const dropped = this.dropped;
    this.dropped = undefined;
    if (dropped === undefined) this.handler.onComplete?.(rawTrailers);
    else this.take(dropped);
  }

  onError(error: Error): void {
    this.dropped = undefined;
    if (this.forwarded) {
      this.handler.onError?.(error);
      return;
    }
    this.take(this.plan.onError(error, undefined));
  }

  /** What the handler downstream aborts with: the current attempt, and no re-send after it. */
  private readonly abort = (reason?: Error): void => {
    this.abortedWith ??= reason ?? new Error('aborted');
    this.abortCurrent?.(reason);
  };

  /** Takes a step of the plan: every step but `FINISH` (forwarding the answer, done in `onHeaders`). */
  private take(step: CallStep): void {
    if (step === RENEW) this.renew();
    else if (step === FINISH) return;
    else if ('fail' in step) this.fail(step.fail as Error);
    else this.retryAfter(step.resendAfterMs);
  }

  private renew(): void {
    this.policy
      .renew(
        this.sent,
        (fresh) =>
          new Promise<{ status: number }>((resolve, reject) => {
            this.answered = { resolve, reject };
            this.resend(fresh);
          }),
      )
      .catch((error: Error) => this.fail(error));
  }

  private retryAfter(delayMs: number): void {
    this.policy.retry.wait(delayMs, undefined).then(
      () => this.resend(this.sent),
      (error: Error) => this.fail(error),
    );
  }

  /** Another attempt, unless the handler downstream aborted the call meanwhile. */
  private resend(token: string): void {
    if (this.abortedWith) this.fail(this.abortedWith);
    else this.send(token);
  }

  private dispatch(): boolean {
    const headers = withHeader(this.options.headers, 'authorization', this.policy.bearer(this.sent));
    return this.next({ ...this.options, headers }, this);
  }
}
