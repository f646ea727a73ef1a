import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { expect } from 'vitest';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import type { TokenStoreOptions } from '../../lib/options/token-store-options.interface.js';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from './capturing-logger.js';
import type { Closable } from './cleanup.js';
import { Fleet, useReplicaProcesses, type CallOutcome, type ReplicaProcesses } from './fleet.js';

export interface StorePlatform {
  readonly clock: FakeClock;
  readonly platform: PlatformEmulator;
  readonly integration: EmulatedIntegration;
  /** The integration's options with a fresh key and key prefix: one store namespace per test. */
  readonly shared: PlatformAuthOptions;
}

/** Short bounds, so a replica that cannot use the store gives up on it quickly. */
export const QUICK_STORE_TIMING = { operationTimeoutMs: 1_000, lockTtlMs: 3_000, waitTimeoutMs: 8_000 };

/** An emulator on a fake clock, and options for replicas that share its tokens through `store` (the Redis settings). */
export async function startStorePlatform(
  track: <T extends Closable>(resource: T) => T,
  store: TokenStoreOptions,
): Promise<StorePlatform> {
  const clock = new FakeClock(Date.now());
  const platform = track(await PlatformEmulator.start({ now: () => clock.now() }));
  const integration = await platform.createIntegration();
  const shared: PlatformAuthOptions = {
    ...integration.moduleOptions,
    tokenStore: {
      encryptionKey: randomBytes(32).toString('base64'),
      keyPrefix: `t-${randomBytes(4).toString('hex')}:`,
      ...QUICK_STORE_TIMING,
      ...store,
    },
    exchange: { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 1_000, maxTotalMs: 5_000 } },
  };
  return { clock, platform, integration, shared };
}

/** The store settings of `options`. */
export function storeOf(options: PlatformAuthOptions): TokenStoreOptions {
  return options.tokenStore as TokenStoreOptions;
}

/** `options` with some of its store settings replaced. */
export function withStore(options: PlatformAuthOptions, store: TokenStoreOptions): PlatformAuthOptions {
  return { ...options, tokenStore: { ...storeOf(options), ...store } };
}

/**
 * For a test file: `const startStoreFleet = useStoreFleets()` at the top level gives a function that starts a fleet of
 * replica processes with the platform's options (their clocks start at its clock's time); the processes are reused
 * by later fleets of the worker (see `useReplicaProcesses`).
 */
export function useStoreFleets(): (
  track: <T extends Closable>(resource: T) => T,
  platform: StorePlatform,
  processes: number,
  instances: number,
) => Promise<Fleet> {
  const pool: ReplicaProcesses = useReplicaProcesses();
  return (track, { clock, shared }, processes, instances) =>
    Fleet.start({ pool, processes, instances, clock, module: { ...shared } }).then(track);
}

export function tokensOf(outcomes: CallOutcome[]): string[] {
  return outcomes.map((outcome) => {
    if (!outcome.ok) throw new Error(`a call failed: ${outcome.message}`);
    return outcome.token;
  });
}

/** A cold fleet makes exactly 1 exchange, and so does each renewal: every instance holds the same token. */
export async function expectOneExchangePerLifetime(fleet: Fleet, platform: PlatformEmulator): Promise<void> {
  const first = tokensOf(await fleet.getAll());
  expect(new Set(first).size).toBe(1);
  expect(platform.counters.exchanges.total).toBe(1);
  // Into every instance's renewal window (60 s before expiry, less up to 10 % jitter), before expiry.
  await fleet.advance(547_000);
  tokensOf(await fleet.getAll());
  await expect
    .poll(
      async () => {
        const renewed = tokensOf(await fleet.getAll());
        return new Set(renewed).size === 1 && renewed[0] !== first[0];
      },
      { timeout: 60_000, interval: 50 },
    )
    .toBe(true);
  expect(platform.counters.exchanges.total).toBe(2);
}

/**
 * After the store came back: moves the fleet's clocks a token lifetime at a time (each move also passes the second a
 * replica leaves a failed store alone) until every instance holds one shared token; at most 5 lifetimes, since a
 * replica may need a probe or two to connect anew (a sentinel client to ask for the new master). Returns how many
 * exchanges the last lifetime took: 1 when the fleet shares again.
 */
export async function untilSharedAgain(fleet: Fleet, platform: PlatformEmulator): Promise<number> {
  for (let lifetime = 1; ; lifetime += 1) {
    const before = platform.counters.exchanges.total;
    await fleet.advance(601_000);
    const tokens = tokensOf(await fleet.getAll());
    if (new Set(tokens).size === 1 || lifetime === 5) return platform.counters.exchanges.total - before;
  }
}

/** One replica in this process: a module instance with its own token cache, and the lines it logged. */
export async function storeReplica(
  track: <T extends Closable>(resource: T) => T,
  options: PlatformAuthOptions,
  clock: FakeClock,
): Promise<{ tokens: TokenProvider; logger: CapturingLogger; moduleRef: TestingModule }> {
  const logger = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    // Replicas join one by one and tests count exchanges from the first call; the boot-time check is opted into.
    imports: [PlatformAuthModule.forRoot({ startupCheck: 'off', ...options, clock, logger })],
  }).compile();
  await moduleRef.init();
  track(moduleRef);
  return { tokens: moduleRef.get(TokenProvider), logger, moduleRef };
}
