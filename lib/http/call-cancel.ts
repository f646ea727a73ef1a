import { CanceledError, type CancelToken, type InternalAxiosRequestConfig } from 'axios';
import { eitherSignal } from '../util/abort.util.js';

type Listener = (reason: unknown) => void;

/**
 * The cancellation of one `PlatformHttpService` call, given to axios as the config's `cancelToken`: what axios asks
 * of a cancel token (`subscribe`, `unsubscribe`, `throwIfRequested`, `toAbortSignal` for its fetch adapter, `reason`)
 * in plain calls, without the stock service's `CancelToken` (a promise and an executor per request) or an
 * `AbortController` (an event target per request, whose listeners axios adds and removes on every request). An
 * `AbortSignal` is made only when something needs one: a wait before a re-send, a rate limit's turn, or axios's
 * fetch adapter.
 */
export class CallCancel {
  reason?: CanceledError<unknown>;
  /** axios subscribes one listener per request in flight: one, or a few across a call's hops. */
  #listeners: Listener[] = [];
  #controller?: AbortController;

  /** The caller's call was unsubscribed before it settled: the request in flight stops, and nothing is re-sent. */
  cancel(): void {
    if (this.reason) return;
    const reason = new CanceledError<unknown>('canceled: unsubscribed before the response');
    this.reason = reason;
    // The signal first: a listener that throws must not keep the call's waits going.
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener(reason);
  }

  subscribe(listener: Listener): void {
    if (this.reason) listener(this.reason);
    else this.#listeners.push(listener);
  }

  unsubscribe(listener: Listener): void {
    const index = this.#listeners.indexOf(listener);
    if (index !== -1) this.#listeners.splice(index, 1);
  }

  throwIfRequested(): void {
    if (this.reason) throw this.reason;
  }

  /** A signal that aborts when the call is cancelled: made on first use, then the same one. */
  toAbortSignal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.reason) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }
}

/** `CallCancel` as the config's `cancelToken`, which axios types as its own class. */
export function asCancelToken(cancel: CallCancel): CancelToken {
  return cancel as unknown as CancelToken;
}

/**
 * What ends a wait of this call (a re-send's delay, a rate limit's turn): the caller's own signal, the call's
 * cancellation by `PlatformHttpService`, or both. Asked only when the call waits, so a plain call makes no signal.
 */
export function waitSignal(config: InternalAxiosRequestConfig): AbortSignal | undefined {
  const callers = config.signal instanceof AbortSignal ? config.signal : undefined;
  const cancel: unknown = config.cancelToken;
  if (!(cancel instanceof CallCancel)) return callers;
  return eitherSignal(callers, cancel.toAbortSignal());
}
