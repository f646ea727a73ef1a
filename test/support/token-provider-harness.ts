import { expect } from 'vitest';
import type { LoggerService } from '@nestjs/common';
import { TokenExchangeError, type Clock, type PlatformAuthOptions, type TokenProvider } from 'nestjs-platform-auth';
import { loadPlatformAuthConfig, type ResolvedPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { PlatformAuthRuntime } from '../../lib/platform-auth.wiring.js';
import { FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from './capturing-logger.js';
import { expectNoSecrets } from './leak-check.js';

export interface ProviderHarness {
  tokens: TokenProvider;
  clock: FakeClock;
  /** What the provider logged (its warnings), kept off the console. */
  logger: CapturingLogger;
  destroy(): void;
}

/**
 * An integration built by the composition root the module uses, without a Nest container: for tests that need its
 * parts (provider, signer) but not an application. Shut it down with `onApplicationShutdown()`.
 */
export function wireForTest(
  config: ResolvedPlatformAuthConfig,
  clock: Clock,
  logger: LoggerService = new CapturingLogger(),
): PlatformAuthRuntime {
  const telemetry = PlatformAuthTelemetry.channelOnly('test', clock);
  return new PlatformAuthRuntime({ config, integration: 'default', clock, logger, telemetry });
}

/** A TokenProvider built by the composition root (no Nest container), on a fake clock, for tests that only need the provider. */
export async function createProvider(
  credentials: TestCredentials,
  baseUrl: string,
  overrides: Partial<PlatformAuthOptions> = {},
  clock = new FakeClock(Date.now(), { autoAdvance: true }),
): Promise<ProviderHarness> {
  const config = await loadPlatformAuthConfig(
    {
      baseUrl,
      machineId: 'hardening-machine',
      // A runtime wired here and then booted counts exchanges from zero like every other harness.
      startupCheck: 'off',
      ...overrides,
      key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem, ...overrides.key },
      exchange: {
        timeoutMs: 500,
        retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2_000, maxTotalMs: 10_000 },
        ...overrides.exchange,
      },
    },
    clock.now(),
  );
  const logger = new CapturingLogger();
  const runtime = wireForTest(config, clock, logger);
  return { tokens: runtime.tokens, clock, logger, destroy: () => void runtime.onApplicationShutdown() };
}

/** The failure of the next exchange, checked to be a TokenExchangeError that leaks none of `secrets`. */
export async function exchangeFailure(
  tokens: TokenProvider,
  secrets: readonly (string | undefined)[],
): Promise<TokenExchangeError> {
  const error = await tokens.getAccessToken().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TokenExchangeError);
  expectNoSecrets(error, secrets);
  return error as TokenExchangeError;
}
