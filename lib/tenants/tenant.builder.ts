import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import { loadPlatformAuthConfig } from '../platform-auth.configuration.js';
import { PlatformAuthTelemetry } from '../telemetry/telemetry.service.js';
import { integrationHash, TELEMETRY_ATTRIBUTES } from '../telemetry/telemetry.events.js';
import { wirePlatformAuth, type PlatformAuthRuntime } from '../platform-auth.wiring.js';
import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import { PlatformTenantConfigError } from './tenants.errors.js';
import type { TenantStoreConnection } from './tenant-store.js';
import type { PlatformTenantOptions } from './tenants.types.js';

/** Where a tenant's id may appear in its telemetry (`forTenants({ telemetry })`, checked). */
export interface TenantTelemetrySettings {
  readonly tenantIdInSpans: boolean;
  readonly tenantIdInMetrics: ReadonlySet<string>;
}

export interface TenantBuildInput {
  readonly tenantId: string;
  /** The tenant's own settings, as the resolver gave them. */
  readonly own: PlatformTenantOptions;
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * One tenant built as a `forRoot` integration is: every start-up check (all problems at once, in an error naming
 * the tenant), then the same composition root, started. The caller owns the runtime and stops it with
 * `onApplicationShutdown()`, which ends its timers, sockets, store connection and PKCS#11 sessions.
 */
export async function buildTenant(input: TenantBuildInput): Promise<PlatformAuthRuntime> {
  const { tenantId, own, options, registry, telemetry: shown, storeConnection, clock, logger } = input;
  let config;
  try {
    config = await loadPlatformAuthConfig(options, clock.now());
  } catch (error) {
    // Named by option only: the PLATFORM_* variable beside it would point at the environment, not the resolver.
    if (error instanceof PlatformAuthConfigError) {
      throw new PlatformTenantConfigError(
        tenantId,
        error.problems.map((problem) => ({ ...problem, setting: problem.option })),
      );
    }
    throw error;
  }
  config = await storeConnection.adopt(config, own);
  for (const warning of config.warnings) logger.warn(`Tenant settings: ${warning.option}: ${warning.message}`);
  let runtime: PlatformAuthRuntime | undefined;
  try {
    const telemetry = await PlatformAuthTelemetry.load(
      {
        // The registry's, not the tenant's: attribute values must not grow with the number of tenants.
        integration: integrationHash(registry, 'tenants'),
        name: registry,
        serverAddress: new URL(config.tokenUrl).hostname,
        logger,
        spanAttributes: shown.tenantIdInSpans ? { [TELEMETRY_ATTRIBUTES.tenantId]: tenantId } : undefined,
        metricAttributes: shown.tenantIdInMetrics.has(tenantId)
          ? { [TELEMETRY_ATTRIBUTES.tenantId]: tenantId }
          : undefined,
      },
      clock,
    );
    runtime = wirePlatformAuth({ config, integration: registry, clock, logger, telemetry });
    await runtime.onModuleInit();
    return runtime;
  } catch (error) {
    if (runtime) await runtime.onApplicationShutdown();
    else await config.credentials.key.close();
    throw error;
  }
}
