import { PlatformAuthError, type ConfigProblem } from '../platform-auth.errors.js';

/** A tenant id fit to quote in a message: short, one line, printable; anything else is not echoed back. */
export function describeTenant(tenantId: string): string {
  return /^[\x21-\x7e]{1,128}$/.test(tenantId) ? `'${tenantId}'` : `(an id of ${tenantId.length} characters)`;
}

/** The resolver answered `undefined`: the application does not know this tenant. */
export class UnknownTenantError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_UNKNOWN_TENANT';

  constructor(readonly tenantId: string) {
    super(
      `Unknown tenant ${describeTenant(tenantId)}: the resolver of PlatformAuthModule.forTenants has no settings for it`,
    );
  }
}

/** A tenant's settings failed the start-up checks a `forRoot` integration passes; lists every problem at once. */
export class PlatformTenantConfigError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TENANT_CONFIG';

  constructor(
    readonly tenantId: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    const lines = problems.map((p) => `  - ${p.setting}: ${p.message}`).join('\n');
    super(`Invalid settings of tenant ${describeTenant(tenantId)} (${count}):\n${lines}`);
  }
}

/**
 * The tenant's resolution failed (the resolver threw, or the tenant could not be started) and callers share that
 * failure until `retryAt`: the resolver is not called again before. The original error is `cause`, which is left
 * out of the message and of `JSON.stringify` (it is the application's, and may say anything).
 */
export class TenantResolutionError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TENANT_RESOLUTION';
  declare readonly cause: unknown;

  constructor(
    readonly tenantId: string,
    readonly retryAt: Date,
    cause: unknown,
  ) {
    const kind = cause instanceof Error ? cause.name : typeof cause;
    super(
      `Resolving tenant ${describeTenant(tenantId)} failed (${kind}); the resolver is asked again from ${retryAt.toISOString()}`,
    );
    Object.defineProperty(this, 'cause', { value: cause, enumerable: false });
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
