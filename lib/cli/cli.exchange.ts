import type { LoggerService } from '@nestjs/common';
import { AssertionSigner } from '../token/assertion.signer.js';
import { systemClock } from '../platform-auth.clock.js';
import { TokenExchangeError } from '../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { TokenProvider } from '../token/token.provider.js';

export interface ExchangeSuccess {
  readonly ok: true;
  readonly accessToken: string;
  readonly tokenType: string;
  readonly expiresInSeconds: number;
  readonly expiresAt: Date;
  /** Platform clock minus local clock, from the response's `Date` header. */
  readonly clockOffsetSeconds?: number;
  readonly durationMs: number;
  readonly warnings: readonly string[];
}

export interface ExchangeFailure {
  readonly ok: false;
  readonly error: TokenExchangeError;
  readonly durationMs: number;
  readonly warnings: readonly string[];
}

export type ExchangeResult = ExchangeSuccess | ExchangeFailure;

/**
 * One exchange through the module's own `AssertionSigner` and `TokenProvider`, with a single attempt: a diagnosis
 * should show what one request does, not hide a transient failure behind retries.
 */
export async function exchangeOnce(config: ResolvedPlatformAuthConfig): Promise<ExchangeResult> {
  const singleAttempt: ResolvedPlatformAuthConfig = { ...config, retry: { ...config.retry, maxAttempts: 1 } };
  const warnings: string[] = [];
  // Nest's console logger writes to stdout and would break --json: the provider's warnings go into the report.
  const provider = new TokenProvider(
    singleAttempt,
    systemClock,
    new AssertionSigner(singleAttempt, systemClock),
    warningCollector(warnings),
  );
  const startedAt = performance.now();
  const requestedAt = Date.now();
  try {
    const token = await provider.getToken();
    const offsetMs = provider.clockOffsetMs;
    return {
      ok: true,
      accessToken: token.accessToken,
      tokenType: token.tokenType,
      // The provider sets expiresAt = send time + expires_in; with one attempt the send time is requestedAt plus
      // the few milliseconds of signing, which rounding to whole seconds removes.
      expiresInSeconds: Math.round((token.expiresAt.getTime() - requestedAt) / 1000),
      expiresAt: token.expiresAt,
      // `|| 0`: a -0 from rounding -0.4 s would print as '-0'.
      clockOffsetSeconds: offsetMs === undefined ? undefined : Math.round(offsetMs / 1000) || 0,
      durationMs: Math.round(performance.now() - startedAt),
      warnings,
    };
  } catch (error) {
    if (!(error instanceof TokenExchangeError)) throw error;
    return { ok: false, error, durationMs: Math.round(performance.now() - startedAt), warnings };
  } finally {
    provider.onApplicationShutdown();
  }
}

function warningCollector(warnings: string[]): LoggerService {
  const collect = (message: unknown) => void warnings.push(String(message));
  return { log: () => undefined, warn: collect, error: collect };
}
