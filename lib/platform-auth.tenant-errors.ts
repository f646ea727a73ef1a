import { PlatformAuthError, type ConfigProblem } from './platform-auth.errors.js';
import { describeFailure, describeTenant } from './util/remote-text.util.js';

export { describeTenant } from './util/remote-text.util.js';

/** The resolver answered `undefined`: the application does not know this tenant. */
export class UnknownTenantError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_UNKNOWN_TENANT';

  constructor(override readonly tenantId: string) {
    super(
      `Unknown tenant ${describeTenant(tenantId)}: the resolver of PlatformAuthModule.forTenants has no settings for it`,
    );
  }
}

/** A tenant's settings failed the start-up checks a `forRoot` integration passes; lists every problem at once. */
export class PlatformTenantConfigError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TENANT_CONFIG';

  constructor(
    override readonly tenantId: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    const lines = problems.map((p) => `  - ${p.setting}: ${p.message}`).join('\n');
    super(`Invalid settings of tenant ${describeTenant(tenantId)} (${count}):\n${lines}`);
  }
}

/**
 * What the registry's wait for a resolver that gave no answer within `resolveTimeoutMs` ends with. It never reaches a
 * caller: the `TenantResolutionError` callers get says it with `timedOut`.
 */
export class ResolverTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/**
 * The tenant's resolution failed (the resolver threw or gave no answer in time, or the tenant could not be started)
 * and callers share that failure until `retryAt`: the resolver is not called again before. The original error is
 * `cause` (none when the resolver timed out), which is left out of the message and of `JSON.stringify` (it is the
 * application's, and may say anything: even its `name` is repeated only when it looks like a class name).
 */
export class TenantResolutionError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TENANT_RESOLUTION';
  declare readonly cause: unknown;
  /** True when the resolver gave no answer within `resolveTimeoutMs`; then there is no `cause`. */
  readonly timedOut: boolean;

  constructor(
    override readonly tenantId: string,
    readonly retryAt: Date,
    cause: unknown,
    /** The back-off as it was when the failure was recorded, on the registry's clock: a client's `Retry-After`. */
    readonly retryAfterMs = 0,
  ) {
    const timedOut = cause instanceof ResolverTimeout;
    const kind = timedOut ? cause.message : describeFailure(cause);
    super(
      `Resolving tenant ${describeTenant(tenantId)} failed (${kind}); the resolver is asked again from ${retryAt.toISOString()}`,
    );
    this.timedOut = timedOut;
    Object.defineProperty(this, 'cause', { value: timedOut ? undefined : cause, enumerable: false });
  }
}

/**
 * The tenant a caller waited for, or called through, was let go: `evict`, `refresh` or the application's shutdown
 * came first. Nothing was sent; asking `PlatformTenants.get` again builds the tenant anew (except after shutdown).
 */
export class TenantReleasedError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TENANT_RELEASED';

  constructor(
    override readonly tenantId: string,
    readonly reason: 'evicted' | 'shutdown',
  ) {
    super(
      reason === 'shutdown'
        ? `Tenant ${describeTenant(tenantId)} is not available: the tenant registry is shut down`
        : `Tenant ${describeTenant(tenantId)} was evicted before this call was sent; get the tenant again`,
    );
  }
}

/** `PlatformTenantHttpService` was called outside `PlatformTenants.run(tenantId, fn)`. */
export class NoCurrentTenantError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_NO_CURRENT_TENANT';

  constructor() {
    super(
      'No current tenant: call PlatformTenantHttpService inside PlatformTenants.run(tenantId, fn), or use PlatformTenants.get(tenantId).http',
    );
  }
}
