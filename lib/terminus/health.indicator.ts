import { Injectable } from '@nestjs/common';
import { ModuleRef, ModulesContainer } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { getTokenProviderToken } from '../platform-auth.integrations.js';
import { PLATFORM_AUTH_INTEGRATION } from '../platform-auth.constants.js';
import { DEFAULT_INTEGRATION } from '../options/integration-name.util.js';
import type { TokenProvider } from '../token/token.provider.js';
import type { TokenProviderStatus } from '../token/token-status.types.js';
import type { PlatformTenants } from '../tenants/platform-tenants.js';
import { PLATFORM_TENANTS } from '../tenants/tenants.module.js';

export interface PlatformAuthHealthOptions {
  /**
   * `passive` (default) only reads `TokenProvider.status()`. `active` also fetches a token when none is cached and
   * none is being fetched, through the provider's single flight, so probes never cause an exchange storm.
   */
  mode?: 'passive' | 'active';
  /**
   * A named integration (`forRoot({ name })`) to check instead of the default one. A name this application does not
   * register gives a down result (503) whose message lists the integrations it does register.
   */
  integration?: string;
}

/** What an integration name looks like (see `forRoot({ name })`); anything else is not echoed back. */
const PRINTABLE_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/**
 * A `@nestjs/terminus` health indicator for platform authentication. Down when there is no usable token and the
 * last exchange failed (or callers are in back-off), when the certificate has expired, or when the integration asked
 * about is not registered in this application. Its detail comes from `status()`: never a token, assertion or PEM.
 */
@Injectable()
export class PlatformAuthHealthIndicator {
  /**
   * Takes the token provider from the application, not from its own module's scope, so the indicator works in a
   * health module of its own whether or not `PlatformAuthModule` is global; and reads which integrations exist
   * from this application's modules, so two applications in one process never see each other's.
   */
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
    private readonly modules: ModulesContainer,
  ) {}

  async isHealthy<const Key extends string = 'platform-auth'>(
    key: Key = 'platform-auth' as Key,
    options: PlatformAuthHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    const name = options.integration ?? DEFAULT_INTEGRATION;
    const registered = this.registeredIntegrations();
    if (!registered.includes(name)) {
      return session.down({ message: unknownIntegration(name, registered), registeredIntegrations: registered });
    }
    const tokens = this.moduleRef.get<TokenProvider>(getTokenProviderToken(name), { strict: false });
    let status = tokens.status();
    if (options.mode === 'active' && status.state === 'none') {
      // A failure is recorded in status() and judged below like any other.
      await tokens.getAccessToken().catch(() => undefined);
      status = tokens.status();
    }
    const problem = healthProblem(status);
    return problem ? session.down({ message: problem, ...detail(status) }) : session.up(detail(status));
  }

  /**
   * One aggregate result for `PlatformAuthModule.forTenants`: counts by token state, never one check per tenant
   * nor a tenant id. Down only when the registry itself cannot work (not in this application, or shut down): a
   * tenant whose platform refuses it is that tenant's problem, shown in `byState`, not the application's.
   */
  isTenantsHealthy<const Key extends string = 'platform-auth-tenants'>(
    key: Key = 'platform-auth-tenants' as Key,
  ): HealthIndicatorResult<Key> {
    const session = this.health.check(key);
    let tenants: PlatformTenants;
    try {
      tenants = this.moduleRef.get<PlatformTenants>(PLATFORM_TENANTS, { strict: false });
    } catch {
      return session.down({ message: 'no tenant registry in this application (import PlatformAuthModule.forTenants)' });
    }
    const status = tenants.status();
    if (status.closed) return session.down({ message: 'the tenant registry is shut down', ...status });
    return session.up({ ...status });
  }

  /** The integrations this application's modules provide, in the order Nest registered them. */
  private registeredIntegrations(): string[] {
    const names: string[] = [];
    for (const module of this.modules.values()) {
      const name: unknown = module.providers.get(PLATFORM_AUTH_INTEGRATION)?.instance;
      if (typeof name === 'string' && !names.includes(name)) names.push(name);
    }
    return names;
  }
}

function unknownIntegration(name: string, registered: readonly string[]): string {
  const asked = PRINTABLE_NAME.test(name) ? `'${name}'` : 'of that name';
  const known =
    registered.length === 0 ? 'none (import PlatformAuthModule)' : registered.map((n) => `'${n}'`).join(', ');
  return `no integration ${asked} is registered in this application; registered integrations: ${known}`;
}

/** Why `status` is not healthy, or `undefined` when it is. */
export function healthProblem(status: TokenProviderStatus): string | undefined {
  if (status.certificate?.expired) return 'the certificate has expired; rotate the credentials';
  if (status.state === 'shutdown') return 'the module is shut down';
  const usable = status.token?.usable === true;
  if (!usable && status.state === 'backoff') return 'no usable token; the last token exchange failed (in back-off)';
  if (!usable && status.lastExchange?.ok === false) return 'no usable token; the last token exchange failed';
  return undefined;
}

function detail(status: TokenProviderStatus): Record<string, unknown> {
  return {
    integration: status.integration,
    state: status.state,
    tokenExpiresAt: status.token?.expiresAt.toISOString(),
    lastExchange: status.lastExchange && {
      ...status.lastExchange,
      at: status.lastExchange.at.toISOString(),
    },
    consecutiveFailures: status.consecutiveFailures,
    nextAttemptAt: status.nextAttemptAt?.toISOString(),
    certificate: status.certificate && {
      ...status.certificate,
      notAfter: status.certificate.notAfter.toISOString(),
    },
    credentialReload: status.credentials.reload.state,
    // Up while the pair in use works: files refused (invalid, or a pair the platform refused) keep the last good one.
    credentialReloadProblems: status.credentials.reload.problems,
    // Up: the platform accepts the pair in use; the files are behind and should be promoted.
    credentialsSwitched: status.credentials.switched && {
      at: status.credentials.switched.at.toISOString(),
      from: status.credentials.switched.from,
      to: status.credentials.switched.to,
      action: 'the platform accepts the next pair only: make it the current pair in the files',
    },
    // Degraded is still up: the app calls the platform, each replica with its own token, so no restart is wanted.
    sharedStore: status.sharedStore?.state,
    sharedStoreProblem: status.sharedStore?.problem,
  };
}
