import type { AxiosInstance } from 'axios';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import type { PlatformAuthRuntime } from '../platform-auth.wiring.js';
import { nameTenantError, nameTokenProviderErrors } from './tenant-error-naming.js';
import { TenantReleasedError } from './tenants.errors.js';
import type { PlatformTenant } from './tenants.types.js';

/**
 * One built tenant: its runtime, a count of the calls in flight through its `http` and `fetch`, and its stop. Evicted,
 * it takes no new call (`TenantReleasedError`) but lets the calls in flight have their answers before its sockets
 * close, for at most the drain time: a POST the platform already took must not be cut.
 */
export class ResidentTenant {
  readonly tenant: PlatformTenant;
  /** The same settled promise for every `get` of a warm tenant: nothing is allocated per call. */
  readonly answer: Promise<PlatformTenant>;
  lastUsedMs: number;
  readonly #tenantId: string;
  readonly #runtime: PlatformAuthRuntime;
  #inFlight = 0;
  #draining = false;
  #drained?: () => void;
  #stopped?: Promise<void>;

  constructor(tenantId: string, runtime: PlatformAuthRuntime, nowMs: number) {
    this.#tenantId = tenantId;
    this.#runtime = runtime;
    this.lastUsedMs = nowMs;
    const axiosRef: AxiosInstance = runtime.httpService.axiosRef;
    // Every call of `PlatformHttpService` goes through its instance's `request`; `fetch` is the instance's own field.
    axiosRef.request = this.#counted(axiosRef.request.bind(axiosRef)) as AxiosInstance['request'];
    const platformFetch = runtime.platformFetch;
    platformFetch.fetch = this.#counted(platformFetch.fetch);
    nameTokenProviderErrors(runtime.tokens, tenantId);
    this.tenant = { tenantId, http: runtime.httpService, fetch: platformFetch, tokens: runtime.tokens };
    this.answer = Promise.resolve(this.tenant);
  }

  /** Calls in flight now: an idle sweep leaves a tenant that has some. */
  get busy(): boolean {
    return this.#inFlight > 0;
  }

  /**
   * Takes no new call, waits for the calls in flight (at most `drainTimeoutMs` on `clock`), then stops the runtime:
   * timers, sockets, store connection, PKCS#11 sessions. With nothing in flight the runtime stops at once.
   */
  stop(drainTimeoutMs: number, clock: Clock): Promise<void> {
    if (this.#stopped) return this.#stopped;
    this.#draining = true;
    if (this.#inFlight === 0) {
      this.#stopped = this.#runtime.onApplicationShutdown();
      return this.#stopped;
    }
    this.#stopped = new Promise<void>((resolve) => {
      const cancel = scheduleOn(clock, drainTimeoutMs, () => this.#drained?.());
      this.#drained = () => {
        this.#drained = undefined;
        cancel();
        resolve();
      };
    }).then(() => this.#runtime.onApplicationShutdown());
    return this.#stopped;
  }

  /** `send`, refusing every call once the tenant was evicted and counting each call in flight until it settles. */
  #counted<A, B, R>(send: (a: A, b?: B) => Promise<R>): (a: A, b?: B) => Promise<R> {
    return (a, b) => {
      if (this.#draining) return Promise.reject(new TenantReleasedError(this.#tenantId, 'evicted'));
      this.#inFlight += 1;
      try {
        return this.#track(send(a, b));
      } catch (error) {
        this.#done();
        throw error;
      }
    };
  }

  /** The call's own promise, counted out when it settles: one `then` per call, with handlers made once. */
  #track<T>(sending: Promise<T>): Promise<T> {
    return sending.then<T, never>(this.#answered, this.#failed);
  }

  readonly #answered = <T>(answer: T): T => {
    this.#done();
    return answer;
  };

  readonly #failed = (error: unknown): never => {
    this.#done();
    // The exception filter logs the message: it says which tenant failed. Only on failure, at no cost to a call.
    throw nameTenantError(error, this.#tenantId);
  };

  #done(): void {
    this.#inFlight -= 1;
    if (this.#inFlight === 0) this.#drained?.();
  }
}
