import { expect } from 'vitest';
import { AssertionSigner, TokenExchangeError, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { resolvePlatformAuthOptions } from '../../lib/options/options.resolver.js';
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

/** A TokenProvider wired by hand (no Nest container), on a fake clock, for tests that only need the provider. */
export function createProvider(
  credentials: TestCredentials,
  baseUrl: string,
  overrides: Partial<PlatformAuthOptions> = {},
  clock = new FakeClock(Date.now(), { autoAdvance: true }),
): ProviderHarness {
  const config = resolvePlatformAuthOptions(
    {
      baseUrl,
      machineId: 'hardening-machine',
      privateKey: credentials.privateKeyPem,
      certificate: credentials.certificatePem,
      exchangeTimeoutMs: 500,
      retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2_000, maxTotalMs: 10_000 },
      ...overrides,
    },
    clock.now(),
  );
  const logger = new CapturingLogger();
  const tokens = new TokenProvider(config, clock, new AssertionSigner(config, clock), logger);
  return { tokens, clock, logger, destroy: () => tokens.onApplicationShutdown() };
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
