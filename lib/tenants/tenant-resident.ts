import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import type { CallAdmission } from '../http/engine/call-admission.js';
import type { PlatformAuthRuntime } from '../platform-auth.wiring.js';
import { nameTenantError, nameTokenProviderErrors } from './tenant-error-naming.js';
import { TenantReleasedError } from './tenants.errors.js';
import type { PlatformTenant } from './tenants.types.js';

/**
 * One built tenant: its runtime, a count of the calls in flight through any of its clients, and its stop. Evicted, it
 * takes no new call (`TenantReleasedError`) but lets the calls in flight have their answers before its sockets close,
 * for at most the drain time: a POST the platform already took must not be cut. Every client of the runtime asks it
 * at the one place each call enters (see `CallAdmission`): `http` and its `axiosRef` by any method, `fetch`, and its
 * undici `dispatcher` and `interceptor`.
 */
export class ResidentTenant implements CallAdmission {
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
    runtime.admitThrough(this);
    nameTokenProviderErrors(runtime.tokens, tenantId);
    this.tenant = { tenantId, http: runtime.httpService, fetch: runtime.platformFetch, tokens: runtime.tokens };
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

  /** Refuses every call once the tenant was evicted; counts the others in flight. */
  enter(): Error | undefined {
    if (this.#draining) return new TenantReleasedError(this.#tenantId, 'evicted');
    this.#inFlight += 1;
    return undefined;
  }

  /** A call settled. The exception filter logs a failure's message: it says which tenant failed. */
  leave(failure?: unknown): unknown {
    this.#inFlight -= 1;
    if (this.#inFlight === 0) this.#drained?.();
    return failure === undefined ? undefined : nameTenantError(failure, this.#tenantId);
  }
}
