import type { LoggerService } from '@nestjs/common';
import { systemClock } from '../platform-auth.clock.js';
import { TokenExchangeError } from '../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../platform-auth.configuration.js';
import { DEFAULT_INTEGRATION } from '../options/integration-name.util.js';
import { startIntegration } from '../platform-auth.builder.js';
import type { PlatformAuthRuntime } from '../platform-auth.wiring.js';
import { offsetSeconds } from '../token/token-exchange.hints.js';

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

type ExchangeResult = ExchangeSuccess | ExchangeFailure;

/**
 * The integration as the module builds it, for one command: the same builder, no shared store (a diagnosis shows
 * what this process does), telemetry on the diagnostics channel only, and one attempt per exchange: a diagnosis
 * should show what one request does, not hide a transient failure behind retries. The command reports the
 * configuration's warnings itself (stdout belongs to `--json`). Shut it down with `onApplicationShutdown()`.
 */
export function commandLineRuntime(
  config: ResolvedPlatformAuthConfig,
  logger: LoggerService,
): Promise<PlatformAuthRuntime> {
  return startIntegration({
    config: { ...config, tokenStore: undefined, retry: { ...config.retry, maxAttempts: 1 }, warnings: [] },
    integration: DEFAULT_INTEGRATION,
    clock: systemClock,
    logger,
    telemetry: { channelOnly: true },
  });
}

/**
 * The integration as an application runs it, for `proxy`: the same builder with the configuration as it is (its
 * warnings logged, its retry policy, and its rate limit and shared store when configured), telemetry on the
 * diagnostics channel only. Start it with `onModuleInit()`, shut it down with `onApplicationShutdown()`.
 */
export function applicationRuntime(
  config: ResolvedPlatformAuthConfig,
  integration: string,
  logger: LoggerService,
): Promise<PlatformAuthRuntime> {
  return startIntegration({ config, integration, clock: systemClock, logger, telemetry: { channelOnly: true } });
}

/** One exchange through the module's own signer and token provider, with a single attempt. */
export async function exchangeOnce(config: ResolvedPlatformAuthConfig): Promise<ExchangeResult> {
  const warnings: string[] = [];
  // Nest's console logger writes to stdout and would break --json: the provider's warnings go into the report.
  const runtime = await commandLineRuntime(config, warningCollector(warnings));
  const provider = runtime.tokens;
  const startedAt = performance.now();
  const requestedAt = Date.now();
  try {
    const token = await provider.getToken();
    return {
      ok: true,
      accessToken: token.accessToken,
      tokenType: token.tokenType,
      // The provider sets expiresAt = send time + expires_in; with one attempt the send time is requestedAt plus
      // the few milliseconds of signing, which rounding to whole seconds removes.
      expiresInSeconds: Math.round((token.expiresAt.getTime() - requestedAt) / 1000),
      expiresAt: token.expiresAt,
      clockOffsetSeconds: offsetSeconds(provider.clockOffsetMs),
      durationMs: Math.round(performance.now() - startedAt),
      warnings,
    };
  } catch (error) {
    if (!(error instanceof TokenExchangeError)) throw error;
    return { ok: false, error, durationMs: Math.round(performance.now() - startedAt), warnings };
  } finally {
    await runtime.onApplicationShutdown();
  }
}

/** A logger that keeps warnings and errors in `warnings` (off stdout, which `--json` owns) and drops the rest. */
export function warningCollector(warnings: string[]): LoggerService {
  const collect = (message: unknown) => void warnings.push(String(message));
  return { log: () => undefined, warn: collect, error: collect };
}
