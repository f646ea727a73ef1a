import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import { ResolverTimeout } from './tenants.errors.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import type { PlatformTenant } from './tenants.types.js';

/**
 * A tenant being resolved and built, with the callers waiting for it. It is not resident yet, so it displaces no
 * resident tenant: only a tenant the resolver gave valid settings for is admitted. `release` answers every waiter at
 * once (evict, refresh, shutdown), whatever the resolver is still doing.
 */
export class PendingTenant {
  readonly promise: Promise<PlatformTenant>;
  #settle!: { resolve: (tenant: PlatformTenant) => void; reject: (error: unknown) => void };
  #released = false;

  constructor() {
    this.promise = new Promise<PlatformTenant>((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    // Waiters may all be gone (a request that timed out): the rejection is theirs, not an unhandled one.
    this.promise.catch(() => undefined);
  }

  /** True once the waiters were answered by `release`: what the build makes afterwards is thrown away. */
  get released(): boolean {
    return this.#released;
  }

  resolve(tenant: PlatformTenant): void {
    if (!this.#released) this.#settle.resolve(tenant);
  }

  reject(error: unknown): void {
    if (!this.#released) this.#settle.reject(error);
  }

  release(error: unknown): void {
    this.reject(error);
    this.#released = true;
  }
}

/**
 * The resolver's answer, or a `ResolverTimeout` after `timeoutMs` on `clock`: a resolver that never settles
 * must not hold a tenant's callers for good.
 */
export function resolveWithin(
  resolve: (tenantId: string) => Promise<PlatformAuthOptions | undefined>,
  tenantId: string,
  timeoutMs: number,
  clock: Clock,
): Promise<PlatformAuthOptions | undefined> {
  return new Promise((fulfil, reject) => {
    const cancel = scheduleOn(clock, timeoutMs, () => reject(new ResolverTimeout(timeoutMs)));
    // A resolver that throws rather than rejects fails alike.
    new Promise<PlatformAuthOptions | undefined>((settle) => settle(resolve(tenantId)))
      .finally(cancel)
      .then(fulfil, reject);
  });
}
