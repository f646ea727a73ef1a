import type { PlatformAuthOptions } from '../options/platform-auth-options.interface.js';
import type { PlatformHttpService } from '../http/platform-http.service.js';
import type { PlatformFetch } from '../http/clients/platform-fetch.js';
import type { TokenProvider } from '../token/token.provider.js';
import type { TokenProviderStatus } from '../token/token-status.types.js';

/**
 * What `forTenants` takes: the application's lookup, the registry's bounds, and settings every tenant shares (the
 * shared store, timeouts, telemetry, clock, logger). A tenant's own settings win over the shared ones.
 */
export interface PlatformTenantsOptions extends Partial<PlatformAuthOptions> {
  /**
   * The application's lookup (a database row, a secret manager, files): the tenant's settings in the shape `forRoot`
   * takes (platform URL, machineId, key, …), or `undefined` for a
   * tenant it does not know (`UnknownTenantError`). Called once per resolution however many callers wait; when it
   * throws or gives no answer within `resolveTimeoutMs`, callers share the failure for a back-off of 1 s, doubling on
   * each further failure up to 30 s. A tenant is admitted (and may displace the least recently used) only once this
   * gave valid settings for it.
   */
  resolve: (tenantId: string) => Promise<PlatformAuthOptions | undefined>;
  /**
   * The registry's name: the `platform_auth.integration.name` of every tenant's metrics and the logger context, so
   * the number of attribute values never grows with tenants. Default `tenants`.
   */
  name?: string;
  /** Tenants holding keys, tokens and sockets at once; past it the least recently used is evicted. Default 1,000. */
  maxResident?: number;
  /**
   * A tenant unused for this long is evicted (it comes back on its next `get`); one with calls in flight is not
   * idle. Default 30 minutes.
   */
  idleTimeoutMs?: number;
  /**
   * How long `resolve` may take: its callers then get a `TenantResolutionError` (`timedOut`), shared for the back-off
   * as any failed resolution. Default 10 seconds.
   */
  resolveTimeoutMs?: number;
  /**
   * How long an evicted tenant's calls in flight may take to get their answers before its sockets close; new calls
   * to it are refused at once (`TenantReleasedError`). Default 30 seconds.
   */
  drainTimeoutMs?: number;
  /**
   * Where a tenant's id (`platform_auth.tenant.id`) may appear in telemetry. Without these, nothing a tenant emits
   * names it: a metric attribute per tenant makes a series per tenant, and an id may say who the customer is.
   */
  telemetry?: {
    /** Every tenant's spans (the token exchange, the 401 re-send) carry its id. Default false. */
    tenantIdInSpans?: boolean;
    /**
     * The tenants whose metrics carry their id, each a series of its own (a few large customers watched apart); the
     * others' metrics stay under the registry's name. Default none.
     */
    tenantIdInMetrics?: readonly string[];
  };
  /** Register the module globally. */
  isGlobal?: boolean;
}

/** A resident tenant: its authenticated HTTP client and its token provider. Ask `PlatformTenants.get` per unit of work. */
export interface PlatformTenant {
  readonly tenantId: string;
  /** Requests to the tenant's platform carry the tenant's token, and only the tenant's. */
  readonly http: PlatformHttpService;
  /** `fetch` with the tenant's token, by the same rules as `http` (see `PlatformFetch`). */
  readonly fetch: PlatformFetch;
  readonly tokens: TokenProvider;
}

/** Counts only: never a tenant id. */
export interface PlatformTenantsStatus {
  /** Tenants resident now (built, holding keys, tokens and sockets). */
  readonly resident: number;
  /** Tenants being resolved or built now: not resident yet, so they displace none. */
  readonly resolving: number;
  readonly maxResident: number;
  /** Tenants evicted since start (least recently used, idle, or by `evict`). */
  readonly evictions: number;
  /** Resolutions that failed since start (the resolver threw, or the settings failed their checks). */
  readonly resolverFailures: number;
  /** True once the application shut the registry down: it resolves no tenant any more. */
  readonly closed: boolean;
  /** Resident tenants per token state (see `TokenProviderStatus`'s `state`). */
  readonly byState: Readonly<Record<TokenProviderStatus['state'], number>>;
}
