import { AsyncLocalStorage } from 'node:async_hooks';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import { shutdownError } from '../platform-auth.errors.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import type { PlatformAuthRuntime } from '../platform-auth.wiring.js';
import type { TokenState } from '../token/token-status.types.js';
import { buildTenant, tenantOptions, type TenantTelemetrySettings } from './tenant.builder.js';
import { TenantStoreConnection } from './tenant-store.js';
import { TenantFailures } from './tenant-failures.js';
import { PlatformTenantConfigError, UnknownTenantError } from './tenants.errors.js';
import type { PlatformTenant, PlatformTenantOptions, PlatformTenantsStatus } from './tenants.types.js';

/** The registry's settings once `forTenants` options are checked. */
export interface TenantRegistrySettings {
  readonly name: string;
  readonly resolve: (tenantId: string) => Promise<PlatformTenantOptions | undefined>;
  /** Settings every tenant shares; the tenant's own win. */
  readonly shared: Partial<PlatformAuthOptions>;
  readonly maxResident: number;
  readonly idleTimeoutMs: number;
  readonly telemetry: TenantTelemetrySettings;
  readonly clock: Clock;
  readonly logger: LoggerService;
}

interface Resident {
  tenant: Promise<PlatformTenant>;
  runtime?: PlatformAuthRuntime;
  lastUsedMs: number;
  evicted: boolean;
}

const STATES: readonly TokenState[] = ['valid', 'renewing', 'none', 'backoff', 'shutdown'];

/**
 * Integrations added at run time, one per tenant, each built on first use by the same composition root as a
 * `forRoot` integration. Bounded: at most `maxResident` tenants hold keys, tokens and sockets (least recently used
 * evicted first), and a tenant idle for `idleTimeoutMs` is evicted; an evicted tenant comes back on its next `get`.
 */
export class PlatformTenants {
  // True private fields: the tenants' runtimes hold their keys, and must not show when the container is inspected.
  readonly #settings: TenantRegistrySettings;
  /** In order of last use, least recent first: the LRU order is the map's own. */
  readonly #residents = new Map<string, Resident>();
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
   * `PlatformTenantConfigError` (every problem of its settings), or the `TenantResolutionError` callers share while
   * a failed resolution backs off.
   */
  get(tenantId: string): Promise<PlatformTenant> {
    if (this.#closed) return Promise.reject(shutdownError());
    const now = this.#settings.clock.now();
    this.#sweepIdle(now);
    const resident = this.#residents.get(tenantId);
    if (resident) {
      this.#residents.delete(tenantId);
      this.#residents.set(tenantId, resident);
      resident.lastUsedMs = now;
      return resident.tenant;
    }
    const failed = this.#failures.current(tenantId, now);
    if (failed) return Promise.reject(failed);
    // The build reads the entry only after its first await, by which time `tenant` is set.
    const entry = { lastUsedMs: now, evicted: false } as Resident;
    entry.tenant = this.#build(tenantId, entry);
    this.#residents.set(tenantId, entry);
    while (this.#residents.size > this.#settings.maxResident) this.#evictOldest();
    this.#armSweep();
    return entry.tenant;
  }

  /** Stops the tenant (timers, sockets, store connection, PKCS#11 sessions) and forgets it; true when it was resident. */
  async evict(tenantId: string): Promise<boolean> {
    const resident = this.#residents.get(tenantId);
    if (!resident) return false;
    await this.#stop(tenantId, resident);
    return true;
  }

  /** Resolves the tenant again (after the application stored a next pair, say): the old one is stopped first. */
  async refresh(tenantId: string): Promise<PlatformTenant> {
    this.#failures.forget(tenantId);
    await this.evict(tenantId);
    return this.get(tenantId);
  }

  /** Counts only, never a tenant id. */
  status(): PlatformTenantsStatus {
    const byState = Object.fromEntries(STATES.map((state) => [state, 0])) as Record<TokenState, number>;
    for (const resident of this.#residents.values()) byState[resident.runtime?.tokens.status().state ?? 'none'] += 1;
    return {
      resident: this.#residents.size,
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

  /** At application shutdown: every tenant stopped, nothing resolved any more. */
  async onApplicationShutdown(): Promise<void> {
    this.#closed = true;
    this.#cancelSweep?.();
    await Promise.all([...this.#residents].map(([tenantId, resident]) => this.#stop(tenantId, resident)));
    await this.#storeConnection.close();
  }

  async #build(tenantId: string, entry: Resident): Promise<PlatformTenant> {
    const { resolve, shared, clock, logger, name, telemetry } = this.#settings;
    let runtime: PlatformAuthRuntime;
    try {
      const own = await resolve(tenantId);
      if (own === undefined) throw new UnknownTenantError(tenantId);
      runtime = await buildTenant({
        tenantId,
        own,
        options: tenantOptions(shared, own),
        registry: name,
        telemetry,
        storeConnection: this.#storeConnection,
        clock,
        logger,
      });
    } catch (error) {
      if (this.#residents.get(tenantId) === entry) this.#residents.delete(tenantId);
      if (error instanceof UnknownTenantError || error instanceof PlatformTenantConfigError) throw error;
      throw this.#failures.record(tenantId, error, clock.now());
    }
    this.#failures.forget(tenantId);
    if (entry.evicted) {
      // Evicted while it was being built: nobody may use it, and what it opened is released now.
      await runtime.onApplicationShutdown();
    } else {
      entry.runtime = runtime;
    }
    return { tenantId, http: runtime.httpService, fetch: runtime.platformFetch, tokens: runtime.tokens };
  }

  #evictOldest(): void {
    const [tenantId, resident] = this.#residents.entries().next().value!;
    void this.#stop(tenantId, resident);
  }

  async #stop(tenantId: string, resident: Resident): Promise<void> {
    if (this.#residents.get(tenantId) === resident) this.#residents.delete(tenantId);
    if (resident.evicted) return;
    resident.evicted = true;
    this.#evictions += 1;
    const runtime = resident.runtime;
    resident.runtime = undefined;
    try {
      await runtime?.onApplicationShutdown();
    } catch (error) {
      this.#settings.logger.warn(`Stopping an evicted tenant failed: ${(error as Error).message}`);
    }
  }

  #sweepIdle(now: number): void {
    const limit = now - this.#settings.idleTimeoutMs;
    for (const [tenantId, resident] of this.#residents) {
      if (resident.lastUsedMs > limit) break;
      void this.#stop(tenantId, resident);
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
