import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { getTokenProviderToken, registeredTokenProviderToken } from '../platform-auth.integrations.js';
import { PlatformAuthConfigError } from '../platform-auth.errors.js';
import type { TokenProvider } from '../token/token.provider.js';
import type { TokenProviderStatus } from '../token/token-status.types.js';

export interface PlatformAuthHealthOptions {
  /**
   * `passive` (default) only reads `TokenProvider.status()`. `active` also fetches a token when none is cached and
   * none is being fetched, through the provider's single flight, so probes never cause an exchange storm.
   */
  mode?: 'passive' | 'active';
  /** A named integration (`forRoot({ name })`) to check instead of the default one. */
  integration?: string;
}

/**
 * A `@nestjs/terminus` health indicator for platform authentication. Down when there is no usable token and the
 * last exchange failed (or callers are in back-off), or when the certificate has expired. Its detail comes from
 * `status()`: never a token, assertion or PEM.
 */
@Injectable()
export class PlatformAuthHealthIndicator {
  /**
   * Takes the token provider from the application, not from its own module's scope, so the indicator works in a
   * health module of its own whether or not `PlatformAuthModule` is global.
   */
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
  ) {}

  async isHealthy<const Key extends string = 'platform-auth'>(
    key: Key = 'platform-auth' as Key,
    options: PlatformAuthHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const tokens =
      options.integration === undefined
        ? this.moduleRef.get<TokenProvider>(getTokenProviderToken(), { strict: false })
        : this.namedTokens(options.integration);
    let status = tokens.status();
    if (options.mode === 'active' && status.state === 'none') {
      // A failure is recorded in status() and judged below like any other.
      await tokens.getAccessToken().catch(() => undefined);
      status = tokens.status();
    }
    const session = this.health.check(key);
    const problem = healthProblem(status);
    return problem ? session.down({ message: problem, ...detail(status) }) : session.up(detail(status));
  }

  private namedTokens(name: string): TokenProvider {
    const token = registeredTokenProviderToken(name);
    if (!token) {
      const message = `no integration named '${name}' is registered (PlatformAuthModule.forRoot({ name }))`;
      throw new PlatformAuthConfigError([{ option: 'integration', setting: 'integration', message }]);
    }
    return this.moduleRef.get<TokenProvider>(token, { strict: false });
  }
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
    // Degraded is still up: the app calls the platform, each replica with its own token, so no restart is wanted.
    sharedStore: status.sharedStore?.state,
    sharedStoreProblem: status.sharedStore?.problem,
  };
}
