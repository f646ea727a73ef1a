import { AsyncLocalStorage } from 'node:async_hooks';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import type { TokenState } from '../token/token-status.types.js';
import { buildTenant, tenantOptions, type TenantTelemetrySettings } from './tenant.builder.js';
import { TenantStoreConnection } from './tenant-store.js';
import { TenantFailures } from './tenant-failures.js';
import { PendingTenant, resolveWithin } from './tenant-pending.js';
import { ResidentTenant } from './tenant-resident.js';
import { TenantLogger } from './tenant-logger.js';
import { describeTenant, escapeText } from '../util/remote-text.util.js';
import { PlatformTenantConfigError, TenantReleasedError, UnknownTenantError } from './tenants.errors.js';
import type { PlatformTenant, PlatformTenantsStatus } from './tenants.types.js';

/** The registry's settings once `forTenants` options are checked. */
export interface TenantRegistrySettings {
  readonly name: string;
  readonly resolve: (tenantId: string) => Promise<PlatformAuthOptions | undefined>;
  /** Settings every tenant shares; the tenant's own win. */
  readonly shared: Partial<PlatformAuthOptions>;
  readonly maxResident: number;
  readonly idleTimeoutMs: number;
  /** How long the resolver may take before its callers get a `TenantResolutionError` (timed out). */
  readonly resolveTimeoutMs: number;
  /** How long an evicted tenant's calls in flight may take before its sockets close. */
  readonly drainTimeoutMs: number;
  readonly telemetry: TenantTelemetrySettings;
  readonly clock: Clock;
  readonly logger: LoggerService;
}

const STATES: readonly TokenState[] = ['valid', 'renewing', 'none', 'backoff', 'shutdown'];

/**
 * Integrations added at run time, one per tenant, each built on first use by the same composition root as a
 * `forRoot` integration. Bounded: at most `maxResident` tenants hold keys, tokens and sockets (least recently used
 * evicted first), and a tenant idle for `idleTimeoutMs` is evicted; an evicted tenant comes back on its next `get`.
 * A tenant is admitted only once the resolver gave valid settings for it, so ids it does not know (a flood of made-up
 * ones, say) never displace a resident tenant.
 */
export class PlatformTenants {
  // True private fields: the tenants' runtimes hold their keys, and must not show when the container is inspected.
  readonly #settings: TenantRegistrySettings;
  /** In order of last use, least recent first: the LRU order is the map's own. */
  readonly #residents = new Map<string, ResidentTenant>();
  /** Being resolved or built: one per tenant id, however many callers wait. */
  readonly #pending = new Map<string, PendingTenant>();
  readonly #failures: TenantFailures;
  readonly #context = new AsyncLocalStorage<string>();
  readonly #storeConnection = new TenantStoreConnection();
  #evictions = 0;
  #cancelSweep?: () => void;
  #closed = false;

  /** @internal */
  constructor(settings: TenantRegistrySettings) {
    this.#settings = settings;
    this.#failures = new TenantFailures(settings.maxResident);
  }

  /**
   * The tenant, built on first use: one resolver call however many callers wait. Rejects with `UnknownTenantError`,
   * `PlatformTenantConfigError` (every problem of its settings), the `TenantResolutionError` callers share while a
   * failed or timed-out resolution backs off, or `TenantReleasedError` when `evict`, `refresh` or shutdown came
   * first. Never a stopped tenant.
   */
  get(tenantId: string): Promise<PlatformTenant> {
    if (this.#closed) return Promise.reject(new TenantReleasedError(tenantId, 'shutdown'));
    const now = this.#settings.clock.now();
    this.#sweepIdle(now);
    const resident = this.#residents.get(tenantId);
    if (resident) {
      this.#residents.delete(tenantId);
      this.#residents.set(tenantId, resident);
      resident.lastUsedMs = now;
      return resident.answer;
    }
    const pending = this.#pending.get(tenantId);
    if (pending) return pending.promise;
    const failed = this.#failures.current(tenantId, now);
    if (failed) return Promise.reject(failed);
    const started = new PendingTenant();
    this.#pending.set(tenantId, started);
    void this.#build(tenantId, started);
    return started.promise;
  }

  /**
   * Stops the tenant and forgets it; true when it was resident or being built. Callers still waiting for it get
   * `TenantReleasedError` at once; its calls in flight finish first (for at most the drain time), then its timers,
   * sockets, store connection and PKCS#11 sessions stop.
   */
  async evict(tenantId: string): Promise<boolean> {
    const pending = this.#pending.get(tenantId);
    if (pending) {
      this.#pending.delete(tenantId);
      pending.release(new TenantReleasedError(tenantId, 'evicted'));
    }
    const resident = this.#residents.get(tenantId);
    if (resident) await this.#stop(tenantId, resident);
    return pending !== undefined || resident !== undefined;
  }

  /**
   * Resolves the tenant again (after the application stored a next pair, say): the old one is stopped first, once its
   * calls in flight have their answers (at most the drain time), and callers still waiting for it are released.
   */
  async refresh(tenantId: string): Promise<PlatformTenant> {
    this.#failures.forget(tenantId);
    await this.evict(tenantId);
    return this.get(tenantId);
  }

  /** Counts only, never a tenant id. */
  status(): PlatformTenantsStatus {
    const byState = Object.fromEntries(STATES.map((state) => [state, 0])) as Record<TokenState, number>;
    for (const resident of this.#residents.values()) byState[resident.tenant.tokens.status().state] += 1;
    return {
      resident: this.#residents.size,
      resolving: this.#pending.size,
      maxResident: this.#settings.maxResident,
      evictions: this.#evictions,
      resolverFailures: this.#failures.total,
      closed: this.#closed,
      byState,
    };
  }

  /** Runs `fn` with `tenantId` as the current tenant of its async context (`PlatformTenantHttpService` sends as it). */
  run<T>(tenantId: string, fn: () => T): T {
    return this.#context.run(tenantId, fn);
  }

  /** The tenant of the current async context, set by `run`. */
  currentTenantId(): string | undefined {
    return this.#context.getStore();
  }

  /** At application shutdown: waiters released, every tenant stopped (calls in flight drained), nothing resolved. */
  async onApplicationShutdown(): Promise<void> {
    this.#closed = true;
    this.#cancelSweep?.();
    for (const [tenantId, pending] of this.#pending) pending.release(new TenantReleasedError(tenantId, 'shutdown'));
    this.#pending.clear();
    await Promise.all([...this.#residents].map(([tenantId, resident]) => this.#stop(tenantId, resident)));
    await this.#storeConnection.close();
    // Once `run` has been called, Node keeps async hooks on for every promise of the process until each
    // AsyncLocalStorage is disabled: without this, an application that starts and closes modules (a test suite)
    // would pay for every registry it ever made.
    this.#context.disable();
  }

  async #build(tenantId: string, pending: PendingTenant): Promise<void> {
    const { resolve, resolveTimeoutMs, shared, clock, logger, name, telemetry } = this.#settings;
    let resident: ResidentTenant;
    try {
      const own = await resolveWithin(resolve, tenantId, resolveTimeoutMs, clock);
      if (pending.released) return;
      if (own === undefined) throw new UnknownTenantError(tenantId);
      const runtime = await buildTenant({
        tenantId,
        own,
        options: tenantOptions(shared, own),
        registry: name,
        telemetry,
        storeConnection: this.#storeConnection,
        clock,
        logger: new TenantLogger(logger, tenantId),
      });
      resident = new ResidentTenant(tenantId, runtime, clock.now());
    } catch (error) {
      if (pending.released) return;
      this.#pending.delete(tenantId);
      const known = error instanceof UnknownTenantError || error instanceof PlatformTenantConfigError;
      pending.reject(known ? error : this.#failures.record(tenantId, error, clock.now()));
      return;
    }
    if (pending.released) {
      // Let go while it was being built: nobody may use it, and what it opened is released now.
      await this.#quietly(tenantId, resident.stop(0, clock));
      return;
    }
    this.#pending.delete(tenantId);
    this.#failures.forget(tenantId);
    resident.lastUsedMs = clock.now();
    this.#residents.set(tenantId, resident);
    while (this.#residents.size > this.#settings.maxResident) {
      const [oldestId, oldest] = this.#residents.entries().next().value!;
      void this.#stop(oldestId, oldest);
    }
    this.#armSweep();
    pending.resolve(resident.tenant);
  }

  #stop(tenantId: string, resident: ResidentTenant): Promise<void> {
    if (this.#residents.get(tenantId) !== resident) return Promise.resolve();
    this.#residents.delete(tenantId);
    this.#evictions += 1;
    return this.#quietly(tenantId, resident.stop(this.#settings.drainTimeoutMs, this.#settings.clock));
  }

  async #quietly(tenantId: string, stopping: Promise<void>): Promise<void> {
    try {
      await stopping;
    } catch (error) {
      this.#settings.logger.warn(
        `Stopping tenant ${describeTenant(tenantId)} failed: ${escapeText(String((error as Error)?.message))}`,
      );
    }
  }

  /** Idle tenants are evicted; one with calls in flight counts as used now, whatever its last `get`. */
  #sweepIdle(now: number): void {
    const limit = now - this.#settings.idleTimeoutMs;
    const idle: Array<[string, ResidentTenant]> = [];
    for (const entry of this.#residents) {
      if (entry[1].lastUsedMs > limit) break;
      idle.push(entry);
    }
    for (const [tenantId, resident] of idle) {
      if (resident.busy) {
        this.#residents.delete(tenantId);
        this.#residents.set(tenantId, resident);
        resident.lastUsedMs = now;
      } else {
        void this.#stop(tenantId, resident);
      }
    }
  }

  /** One timer for the whole registry, due when the least recently used tenant turns idle. */
  #armSweep(): void {
    if (this.#cancelSweep || this.#closed) return;
    const oldest = this.#residents.values().next().value;
    if (!oldest) return;
    const dueInMs = oldest.lastUsedMs + this.#settings.idleTimeoutMs - this.#settings.clock.now();
    this.#cancelSweep = scheduleOn(this.#settings.clock, Math.max(1, dueInMs), () => {
      this.#cancelSweep = undefined;
      this.#sweepIdle(this.#settings.clock.now());
      this.#armSweep();
    });
  }
}
