import type { BearerPolicy } from './bearer.policy.js';

/**
 * undici's `Dispatcher`, as the global `RequestInit['dispatcher']` names it (the `undici-types` that `@types/node`
 * brings): no import of the optional peer in the declarations.
 */
export type PlatformDispatcher = NonNullable<RequestInit['dispatcher']>;
/** An interceptor for undici's `Dispatcher.compose`. */
export type PlatformInterceptor = (dispatch: PlatformDispatcher['dispatch']) => PlatformDispatcher['dispatch'];

type Headers = Record<string, string | string[] | undefined> | readonly unknown[] | Iterable<unknown> | null;

interface DispatchOptions {
  origin?: string | URL;
  method: string;
  headers?: Headers;
  body?: unknown;
}

/** undici 7's handler interface: `compose` hands every interceptor one (it wraps the older callback kind). */
interface Controller {
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

interface Handler {
  onRequestStart?(controller: Controller, context: unknown): void;
  onRequestUpgrade?(controller: Controller, statusCode: number, headers: unknown, socket: unknown): void;
  onResponseStart?(controller: Controller, statusCode: number, headers: unknown, statusMessage?: string): void;
  onResponseData?(controller: Controller, chunk: Buffer): void;
  onResponseEnd?(controller: Controller, trailers: unknown): void;
  onResponseError?(controller: Controller, error: Error): void;
}

type LooseDispatch = (options: DispatchOptions, handler: Handler) => boolean;

/**
 * The bearer rules as an undici interceptor: the token on requests to allowed origins that carry no `Authorization`
 * of their own, and after a 401 one re-send with a fresh token, for a body undici can send again. Every hop of a
 * redirect that passes through it is decided on its own origin.
 */
export function bearerInterceptor(policy: BearerPolicy): PlatformInterceptor {
  const interceptor = (next: LooseDispatch): LooseDispatch => {
    return (options, handler) => {
      if (hasAuthorization(options.headers) || !policy.isAllowedOrigin(options.origin)) return next(options, handler);
      const call = new BearerCall(policy, next, options, handler);
      const token = policy.peekToken();
      if (token !== undefined) return call.send(token);
      policy.token().then(
        (fresh) => call.send(fresh),
        (error: Error) => call.fail(error),
      );
      return true;
    };
  };
  return interceptor as unknown as PlatformInterceptor;
}

/**
 * One request through the interceptor. The handler downstream sees one request and one response: the refused
 * attempt's response is read and dropped, and the controller it holds follows whichever attempt is current.
 */
class BearerCall implements Handler {
  private readonly controller = new CurrentController();
  private started = false;
  /** The 401 of the first attempt is being read to its end, then the re-send starts. */
  private refused = false;
  private resent = false;
  private sent = '';
  /** Settles the observer's `reauthenticate` when the re-sent attempt answers. */
  private answered?: { resolve(value: { status: number }): void; reject(error: Error): void };

  constructor(
    private readonly policy: BearerPolicy,
    private readonly next: LooseDispatch,
    private readonly options: DispatchOptions,
    private readonly handler: Handler,
  ) {}

  send(token: string): boolean {
    this.sent = token;
    return this.next({ ...this.options, headers: withAuthorization(this.options.headers, `Bearer ${token}`) }, this);
  }

  fail(error: Error): void {
    this.handler.onResponseError?.(this.controller, error);
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.controller.target = controller;
    if (this.started) return;
    this.started = true;
    this.handler.onRequestStart?.(this.controller, context);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: unknown, socket: unknown): void {
    this.handler.onRequestUpgrade?.(this.controller, statusCode, headers, socket);
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: unknown, statusMessage?: string): void {
    if (!this.resent && this.policy.mayRenewAfter(statusCode, this.options.origin, this.replayable())) {
      this.refused = true;
      return;
    }
    this.answered?.resolve({ status: statusCode });
    this.answered = undefined;
    this.handler.onResponseStart?.(this.controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (!this.refused) this.handler.onResponseData?.(this.controller, chunk);
  }

  onResponseEnd(_controller: Controller, trailers: unknown): void {
    if (!this.refused) {
      this.handler.onResponseEnd?.(this.controller, trailers);
      return;
    }
    this.refused = false;
    this.resent = true;
    this.policy
      .renew(
        this.sent,
        (fresh) =>
          new Promise<{ status: number }>((resolve, reject) => {
            this.answered = { resolve, reject };
            this.send(fresh);
          }),
      )
      .catch((error: Error) => this.fail(error));
  }

  onResponseError(_controller: Controller, error: Error): void {
    const answered = this.answered;
    this.answered = undefined;
    // The re-sent attempt failed before it answered: `renew` rejects, and its `catch` tells the handler.
    if (answered) answered.reject(error);
    else this.handler.onResponseError?.(this.controller, error);
  }

  private replayable(): boolean {
    return this.policy.isReplayable(this.options.body);
  }
}

/** The controller the downstream handler holds: it forwards to the current attempt's, keeping a pause across. */
class CurrentController implements Controller {
  private current?: Controller;
  private pausedHere = false;

  set target(controller: Controller) {
    this.current = controller;
    if (this.pausedHere) controller.pause();
  }

  get aborted(): boolean {
    return this.current?.aborted ?? false;
  }

  get paused(): boolean {
    return this.pausedHere || (this.current?.paused ?? false);
  }

  get reason(): Error | null {
    return this.current?.reason ?? null;
  }

  abort(reason: Error): void {
    this.current?.abort(reason);
  }

  pause(): void {
    this.pausedHere = true;
    this.current?.pause();
  }

  resume(): void {
    this.pausedHere = false;
    this.current?.resume();
  }
}

const AUTHORIZATION = 'authorization';

function hasAuthorization(headers: Headers | undefined): boolean {
  if (!headers) return false;
  if (isRecord(headers)) {
    for (const name in headers) if (name.toLowerCase() === AUTHORIZATION) return true;
    return false;
  }
  for (const [name] of headerPairs(headers)) if (name.toLowerCase() === AUTHORIZATION) return true;
  return false;
}

/** A copy with `Authorization` added, in the shape undici takes every other: a flat list of names and values. */
function withAuthorization(headers: Headers | undefined, value: string): Headers {
  if (!headers) return { [AUTHORIZATION]: value };
  if (isRecord(headers)) return { ...headers, [AUTHORIZATION]: value };
  const flat: unknown[] = [];
  for (const [name, header] of headerPairs(headers)) flat.push(name, header);
  flat.push(AUTHORIZATION, value);
  return flat;
}

function isRecord(headers: NonNullable<Headers>): headers is Record<string, string | string[] | undefined> {
  return !Array.isArray(headers) && typeof (headers as Iterable<unknown>)[Symbol.iterator] !== 'function';
}

/** undici's header shapes: a record, a flat `[name, value, …]` list, or an iterable of `[name, value]` pairs. */
function* headerPairs(headers: NonNullable<Headers>): Generator<[string, unknown]> {
  if (isRecord(headers)) {
    for (const name in headers) yield [name, headers[name]];
  } else if (Array.isArray(headers) && !Array.isArray(headers[0])) {
    for (let i = 0; i + 1 < headers.length; i += 2) yield [String(headers[i]), headers[i + 1]];
  } else {
    for (const pair of headers as Iterable<[unknown, unknown]>) yield [String(pair[0]), pair[1]];
  }
}
