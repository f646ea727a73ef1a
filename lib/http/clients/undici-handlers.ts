import type { CallAdmission } from '../engine/call-admission.js';
import { parseRawHeaders, type RawHeaders } from './undici-headers.util.js';

/*
 * undici 7's two handler interfaces. A dispatcher's caller (global fetch, undici's `request`) hands it the older
 * callback kind, which an `Agent` takes as it is; `compose` hands every interceptor the newer controller kind, and
 * converts between the two around it (raw headers parsed into an object, then encoded back into Buffers). The
 * bearer rules speak the older kind, so the library's own dispatcher converts nothing.
 */

/** The newer kind's controller. */
interface Controller {
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

/** The newer kind: what `compose` hands an interceptor. */
export interface Handler {
  onRequestStart?(controller: Controller, context: unknown): void;
  onRequestUpgrade?(controller: Controller, statusCode: number, headers: unknown, socket: unknown): void;
  onResponseStart?(controller: Controller, statusCode: number, headers: unknown, statusMessage?: string): void;
  onResponseData?(controller: Controller, chunk: Buffer): void;
  onResponseEnd?(controller: Controller, trailers: unknown): void;
  onResponseError?(controller: Controller, error: Error): void;
}

/** The older kind: `false` from `onHeaders` or `onData` pauses the response until `resume` is called. */
export interface LegacyHandler {
  onConnect?(abort: (reason?: Error) => void, context?: unknown): void;
  onResponseStarted?(): void;
  onHeaders?(statusCode: number, rawHeaders: RawHeaders, resume: () => void, statusText?: string): boolean | void;
  onData?(chunk: Buffer): boolean | void;
  onComplete?(rawTrailers: RawHeaders | null): void;
  onError?(error: Error): void;
  onUpgrade?(statusCode: number, rawHeaders: RawHeaders, socket: unknown): void;
  onBodySent?(chunk: unknown): void;
  onRequestSent?(): void;
}

/**
 * `handler` as the older kind: as it is when it has the older kind's callbacks, else seen through a view. `compose`
 * hands an interceptor its caller's handler wrapped in undici's `WrapHandler`, which has both kinds, the older
 * passing straight through: taken that way, nothing is converted. A handler of only the newer kind (undici's
 * redirect interceptor's) gets the view.
 */
export function asLegacy(handler: Handler | LegacyHandler): LegacyHandler {
  const onlyNewer = (handler as Handler).onRequestStart && typeof (handler as LegacyHandler).onHeaders !== 'function';
  return onlyNewer ? new LegacyView(handler as Handler) : (handler as LegacyHandler);
}

/** A handler of the newer kind, called through the older kind's callbacks. */
class LegacyView implements LegacyHandler {
  readonly #controller = new ViewController();

  constructor(private readonly handler: Handler) {}

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.#controller.connect(abort);
    this.handler.onRequestStart?.(this.#controller, context);
  }

  onUpgrade(statusCode: number, rawHeaders: RawHeaders, socket: unknown): void {
    this.handler.onRequestUpgrade?.(this.#controller, statusCode, parseRawHeaders(rawHeaders), socket);
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void, statusText?: string): boolean {
    this.#controller.resumeWith = resume;
    this.handler.onResponseStart?.(this.#controller, statusCode, parseRawHeaders(rawHeaders), statusText);
    return !this.#controller.paused;
  }

  onData(chunk: Buffer): boolean {
    this.handler.onResponseData?.(this.#controller, chunk);
    return !this.#controller.paused;
  }

  onComplete(rawTrailers: RawHeaders | null): void {
    this.handler.onResponseEnd?.(this.#controller, parseRawHeaders(rawTrailers ?? []));
  }

  onError(error: Error): void {
    this.handler.onResponseError?.(this.#controller, error);
  }
}

/** The view's controller: an abort asked for before the request connected is passed on when it does. */
class ViewController implements Controller {
  resumeWith?: () => void;
  #abort?: (reason?: Error) => void;
  #paused = false;
  #reason: Error | null = null;

  get aborted(): boolean {
    return this.#reason !== null;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason;
  }

  connect(abort: (reason?: Error) => void): void {
    this.#abort = abort;
    if (this.#reason) abort(this.#reason);
  }

  abort(reason: Error): void {
    if (this.#reason) return;
    this.#reason = reason;
    this.#abort?.(reason);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.resumeWith?.();
  }
}

/** A dispatch counted by the tenant's admission until its handler completes or fails. */
export class AdmittedHandler implements LegacyHandler {
  constructor(
    private readonly admission: CallAdmission,
    private readonly handler: LegacyHandler,
  ) {}

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.handler.onConnect?.(abort, context);
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onUpgrade(statusCode: number, rawHeaders: RawHeaders, socket: unknown): void {
    this.admission.leave();
    this.handler.onUpgrade?.(statusCode, rawHeaders, socket);
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void, statusText?: string): boolean | void {
    return this.handler.onHeaders?.(statusCode, rawHeaders, resume, statusText);
  }

  onData(chunk: Buffer): boolean | void {
    return this.handler.onData?.(chunk);
  }

  onBodySent(chunk: unknown): void {
    this.handler.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    this.handler.onRequestSent?.();
  }

  onComplete(rawTrailers: RawHeaders | null): void {
    this.admission.leave();
    this.handler.onComplete?.(rawTrailers);
  }

  onError(error: Error): void {
    this.handler.onError?.(this.admission.leave(error) as Error);
  }
}
