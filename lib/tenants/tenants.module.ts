import {
  Logger,
  Module,
  type DynamicModule,
  type FactoryProvider,
  type ModuleMetadata,
  type Provider,
} from '@nestjs/common';
import { systemClock } from '../platform-auth.clock.js';
import { LOGGER_CONTEXT, sharedToken } from '../platform-auth.constants.js';
import { PlatformAuthConfigError, type ConfigProblem } from '../platform-auth.errors.js';
import { integrationName } from '../options/integration-name.util.js';
import { PlatformTenants, type TenantRegistrySettings } from './platform-tenants.js';
import { PlatformTenantHttpService } from './tenant-http.service.js';
import { sealTenantsOptions } from './tenants.secrets.js';
import type { PlatformTenantsOptions } from './tenants.types.js';

const DEFAULT_REGISTRY = 'tenants';
const DEFAULT_MAX_RESIDENT = 1_000;
const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000;
/** Below this an idle sweep would evict tenants between two calls of one unit of work. */
const MIN_IDLE_TIMEOUT_MS = 1_000;
const DEFAULT_RESOLVE_TIMEOUT_MS = 10_000;
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

const PLATFORM_TENANTS_OPTIONS = Symbol('PLATFORM_TENANTS_OPTIONS');
/** The registry under a token both builds share, so the health indicator of either finds it. */
export const PLATFORM_TENANTS = sharedToken('PlatformTenants');

/** What `forTenantsAsync` takes: the options from a factory, with what it injects. */
export interface PlatformTenantsAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory: (...args: never[]) => PlatformTenantsOptions | Promise<PlatformTenantsOptions>;
  inject?: FactoryProvider['inject'];
  isGlobal?: boolean;
}

/** The registry's own settings checked (every problem at once); the rest is shared by every tenant. */
function tenantRegistrySettings(options: PlatformTenantsOptions): TenantRegistrySettings {
  const {
    resolve,
    name,
    maxResident,
    idleTimeoutMs,
    resolveTimeoutMs,
    drainTimeoutMs,
    telemetry,
    isGlobal: _global,
    ...shared
  } = options;
  const problems: ConfigProblem[] = [];
  const problem = (option: string, message: string) => problems.push({ option, setting: option, message });
  if (typeof resolve !== 'function')
    problem('resolve', 'must be a function (tenantId) => Promise<settings | undefined>');
  let registry = DEFAULT_REGISTRY;
  try {
    registry = integrationName(name ?? DEFAULT_REGISTRY);
  } catch (error) {
    problems.push(...(error as PlatformAuthConfigError).problems);
  }
  if (maxResident !== undefined && !(Number.isInteger(maxResident) && maxResident >= 1)) {
    problem('maxResident', `must be a whole number >= 1, got ${String(maxResident)}`);
  }
  if (idleTimeoutMs !== undefined && !(Number.isInteger(idleTimeoutMs) && idleTimeoutMs >= MIN_IDLE_TIMEOUT_MS)) {
    problem('idleTimeoutMs', `must be a whole number of ms >= ${MIN_IDLE_TIMEOUT_MS}, got ${String(idleTimeoutMs)}`);
  }
  if (resolveTimeoutMs !== undefined && !(Number.isInteger(resolveTimeoutMs) && resolveTimeoutMs >= 1)) {
    problem('resolveTimeoutMs', `must be a whole number of ms >= 1, got ${String(resolveTimeoutMs)}`);
  }
  if (drainTimeoutMs !== undefined && !(Number.isInteger(drainTimeoutMs) && drainTimeoutMs >= 0)) {
    problem('drainTimeoutMs', `must be a whole number of ms >= 0, got ${String(drainTimeoutMs)}`);
  }
  const inSpans = telemetry?.tenantIdInSpans;
  if (inSpans !== undefined && typeof inSpans !== 'boolean')
    problem('telemetry.tenantIdInSpans', 'must be true or false');
  const inMetrics = telemetry?.tenantIdInMetrics ?? [];
  if (!Array.isArray(inMetrics) || !inMetrics.every((id) => typeof id === 'string' && id !== '')) {
    problem('telemetry.tenantIdInMetrics', 'must be a list of tenant ids (non-empty strings)');
  }
  if (problems.length > 0) throw new PlatformAuthConfigError(problems, registry);
  return {
    name: registry,
    resolve,
    shared,
    maxResident: maxResident ?? DEFAULT_MAX_RESIDENT,
    idleTimeoutMs: idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    resolveTimeoutMs: resolveTimeoutMs ?? DEFAULT_RESOLVE_TIMEOUT_MS,
    drainTimeoutMs: drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS,
    telemetry: { tenantIdInSpans: inSpans ?? false, tenantIdInMetrics: new Set(inMetrics) },
    clock: shared.clock ?? systemClock,
    logger: shared.logger ?? new Logger(`${LOGGER_CONTEXT}:${registry}`),
  };
}

const providers: Provider[] = [
  {
    provide: PlatformTenants,
    useFactory: (options: PlatformTenantsOptions) => new PlatformTenants(tenantRegistrySettings(options)),
    inject: [PLATFORM_TENANTS_OPTIONS],
  },
  { provide: PLATFORM_TENANTS, useExisting: PlatformTenants },
  {
    provide: PlatformTenantHttpService,
    useFactory: (tenants: PlatformTenants) => new PlatformTenantHttpService(tenants),
    inject: [PlatformTenants],
  },
];

/** The module `PlatformAuthModule.forTenants` returns: the registry and the current tenant's HTTP service. */
@Module({})
export class PlatformTenantsModule {
  static forTenants(options: PlatformTenantsOptions): DynamicModule {
    return {
      module: PlatformTenantsModule,
      global: options.isGlobal,
      providers: [{ provide: PLATFORM_TENANTS_OPTIONS, useValue: sealTenantsOptions(options) }, ...providers],
      exports: [PlatformTenants, PLATFORM_TENANTS, PlatformTenantHttpService],
    };
  }

  static forTenantsAsync(options: PlatformTenantsAsyncOptions): DynamicModule {
    return {
      module: PlatformTenantsModule,
      global: options.isGlobal,
      imports: options.imports ?? [],
      providers: [
        {
          provide: PLATFORM_TENANTS_OPTIONS,
          useFactory: async (...args: never[]) => sealTenantsOptions(await options.useFactory(...args)),
          inject: options.inject ?? [],
        },
        ...providers,
      ],
      exports: [PlatformTenants, PLATFORM_TENANTS, PlatformTenantHttpService],
    };
  }
}
