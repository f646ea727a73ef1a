import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { TELEMETRY_ATTRIBUTES } from '../telemetry/telemetry.events.js';
import { loadIntegration, startIntegration } from '../platform-auth.builder.js';
import type { PlatformAuthRuntime } from '../platform-auth.wiring.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import type { TenantStoreConnection } from './tenant-store.js';
import { isPlainObject } from '../util/plain-object.util.js';

/** Where a tenant's id may appear in its telemetry (`forTenants({ telemetry })`, checked). */
export interface TenantTelemetrySettings {
  readonly tenantIdInSpans: boolean;
  readonly tenantIdInMetrics: ReadonlySet<string>;
}

interface TenantBuildInput {
  readonly tenantId: string;
  /** The tenant's own settings, as the resolver gave them. */
  readonly own: PlatformAuthOptions;
  /** The shared settings with the tenant's own over them. */
  readonly options: PlatformAuthOptions;
  /** The registry's name: every tenant's telemetry and start-up line carry it, not the tenant id unless opted in. */
  readonly registry: string;
  readonly telemetry: TenantTelemetrySettings;
  /** The registry's Redis connection, for the tenants whose settings name no Redis of their own. */
  readonly storeConnection: TenantStoreConnection;
  readonly clock: Clock;
  readonly logger: LoggerService;
}

/**
 * The shared settings with the tenant's own over them. A group of options given on both sides (a plain object, such
 * as the shared store's settings or the exchange's) is merged one level deep, so a tenant that sets one field of a
 * group keeps the registry's other fields of it.
 */
export function tenantOptions(shared: Partial<PlatformAuthOptions>, own: PlatformAuthOptions): PlatformAuthOptions {
  const merged: Record<string, unknown> = { ...shared };
  for (const [name, value] of Object.entries(own)) {
    const base = merged[name];
    merged[name] = isPlainObject(base) && isPlainObject(value) ? { ...base, ...value } : value;
  }
  return merged as unknown as PlatformAuthOptions;
}

/**
 * One tenant built as a `forRoot` integration is (`loadIntegration`, `startIntegration`): every start-up check (all
 * problems at once, in an error naming the tenant), the registry's store connection when the tenant names no Redis
 * of its own, then the same composition root, started. The caller owns the runtime and stops it with
 * `onApplicationShutdown()`, which ends its timers, sockets, store connection and PKCS#11 sessions.
 */
export async function buildTenant(input: TenantBuildInput): Promise<PlatformAuthRuntime> {
  const { tenantId, own, options, registry, telemetry: shown, storeConnection, clock, logger } = input;
  const loaded = await loadIntegration({ options, owner: { tenantId }, nowMs: clock.now() });
  const config = await storeConnection.adopt(loaded, own);
  const attribute = { [TELEMETRY_ATTRIBUTES.tenantId]: tenantId };
  return startIntegration({
    config,
    integration: registry,
    clock,
    logger,
    // The registry's, not the tenant's: attribute values must not grow with the number of tenants.
    telemetry: {
      identity: { hashOf: [registry, 'tenants'], name: registry },
      spanAttributes: shown.tenantIdInSpans ? attribute : undefined,
      metricAttributes: shown.tenantIdInMetrics.has(tenantId) ? attribute : undefined,
    },
    start: true,
    warningPrefix: 'Tenant settings: ',
  });
}
