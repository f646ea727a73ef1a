import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { Fleet, useReplicaProcesses, type CallOutcome } from '../support/fleet.js';
import { useCleanup } from '../support/cleanup.js';
import { useRedisServer } from '../support/redis-server.js';
import { eventually } from '../support/eventually.js';

const redis = useRedisServer();
const processes = useReplicaProcesses();
const track = useCleanup();

interface Setup {
  clock: FakeClock;
  platform: PlatformEmulator;
  integration: EmulatedIntegration;
  fleet: Fleet;
}

/** An emulator on a fake clock, and a fleet of replica processes sharing tokens through the test's redis-server. */
async function startFleet(options: {
  processes: number;
  instances: number;
  timing?: Record<string, number>;
  module?: Record<string, unknown>;
}): Promise<Setup> {
  const clock = new FakeClock(Date.now());
  const platform = await PlatformEmulator.start({ now: () => clock.now() });
  track(platform);
  const integration = await platform.createIntegration();
  const fleet = await Fleet.start({
    pool: processes,
    processes: options.processes,
    instances: options.instances,
    clock,
    module: {
      ...integration.moduleOptions,
      tokenStore: {
        url: redis().url,
        encryptionKey: randomBytes(32).toString('base64'),
        // Each test its own namespace: entries left by an earlier test must not be found.
        keyPrefix: `fleet-${randomBytes(4).toString('hex')}:`,
        // Generous, so that a busy machine's slow Redis round trips and exchanges neither time out nor outlive a lock.
        operationTimeoutMs: 2_000,
        lockTtlMs: 10_000,
        waitTimeoutMs: 20_000,
        ...options.timing,
      },
      exchange: { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 1_000, maxTotalMs: 5_000 } },
      ...options.module,
    },
  });
  track(fleet);
  return { clock, platform, integration, fleet };
}

function tokensOf(outcomes: CallOutcome[]): string[] {
  return outcomes.map((outcome) => {
    if (!outcome.ok) throw new Error(`a call failed: ${outcome.message}`);
    return outcome.token;
  });
}

describe('a fleet sharing tokens through Redis', () => {
  it('20 instances in 4 processes start cold with exactly 1 exchange, and make 1 more per renewal', async () => {
    const { platform, fleet } = await startFleet({ processes: 4, instances: 5 });
    const first = tokensOf(await fleet.getAll());
    expect(first).toHaveLength(20);
    expect(new Set(first).size).toBe(1);
    expect(platform.counters.exchanges.total).toBe(1);

    for (let renewal = 1; renewal <= 2; renewal += 1) {
      // Into every instance's renewal window (60 s before expiry, less up to 10 % jitter), before expiry.
      await fleet.advance(547_000);
      const during = tokensOf(await fleet.getAll());
      expect(new Set(during).size).toBe(1);
      await eventually(async () => {
        const renewed = tokensOf(await fleet.getAll());
        expect(new Set(renewed).size).toBe(1);
        expect(renewed[0]).not.toBe(during[0]);
      });
      expect(platform.counters.exchanges.total).toBe(1 + renewal);
    }
    expect((await fleet.logs()).filter((line) => line.level !== 'log')).toEqual([]);
  });

  it('takes over from a lock holder killed mid-exchange once its lock lapses, with one exchange', async () => {
    const { platform, fleet } = await startFleet({
      processes: 2,
      instances: 2,
      timing: { lockTtlMs: 1_000 },
    });
    platform.injectFault({ kind: 'hang' });
    void fleet.getAll([0]).catch(() => undefined);
    await eventually(() => expect(platform.counters.exchanges.total).toBe(1));
    fleet.kill(0);

    const tokens = tokensOf(await fleet.getAll([1]));
    expect(new Set(tokens).size).toBe(1);
    // The hung exchange and one take-over: neither instance of process 1 gave up and exchanged on its own.
    expect(platform.counters.exchanges).toMatchObject({ total: 2, accepted: 1, faulted: 1 });
  });

  it('sends one request for the whole fleet on a 429 with Retry-After, and fails fast until it has passed', async () => {
    const { platform, fleet } = await startFleet({ processes: 3, instances: 2 });
    platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': '30' } });
    const refused = await fleet.getAll();
    expect(refused).toHaveLength(6);
    expect(refused.every((outcome) => !outcome.ok && outcome.status === 429)).toBe(true);
    expect(platform.counters.exchanges.total).toBe(1);

    await fleet.advance(20_000);
    const stillRefused = await fleet.getAll();
    expect(stillRefused.every((outcome) => !outcome.ok && outcome.reason === 'backoff')).toBe(true);
    expect(platform.counters.exchanges.total).toBe(1);

    await fleet.advance(11_000);
    expect(new Set(tokensOf(await fleet.getAll())).size).toBe(1);
    expect(platform.counters.exchanges.total).toBe(2);
  });

  it('loses no call while Redis is frozen (SIGSTOP), then shares again after SIGCONT, logging each change once', async () => {
    const { platform, fleet } = await startFleet({ processes: 2, instances: 2 });
    tokensOf(await fleet.getAll());
    expect(platform.counters.exchanges.total).toBe(1);

    redis().pause();
    try {
      await fleet.advance(601_000); // every cached token has expired
      const during = tokensOf(await fleet.getAll());
      expect(during).toHaveLength(4);
      // Each instance on its own, after one bounded wait for the store.
      expect(platform.counters.exchanges.total).toBe(5);
    } finally {
      redis().resume();
    }
    await fleet.advance(601_000); // past the second a replica leaves a failed store alone, by its clock
    expect(new Set(tokensOf(await fleet.getAll())).size).toBe(1);
    expect(platform.counters.exchanges.total).toBe(6);

    const lines = await fleet.logs();
    expect(lines.filter((line) => line.level === 'warn' && /Token store unavailable/.test(line.message))).toHaveLength(
      4,
    );
    expect(lines.filter((line) => /Token store answers again/.test(line.message))).toHaveLength(4);
    expect(lines.filter((line) => line.level !== 'log' && !/Token store unavailable/.test(line.message))).toEqual([]);
  });

  it('loses no call while Redis is down, and shares again once it is restarted', async () => {
    const { platform, fleet } = await startFleet({ processes: 2, instances: 2 });
    tokensOf(await fleet.getAll());
    await redis().kill();
    try {
      await fleet.advance(601_000);
      expect(tokensOf(await fleet.getAll())).toHaveLength(4);
      expect(platform.counters.exchanges.total).toBe(5);
    } finally {
      await redis().launch();
    }
    // A replica asks a failed store again a second later by its clock, connecting anew.
    await fleet.advance(601_000);
    expect(new Set(tokensOf(await fleet.getAll())).size).toBe(1);
    expect(platform.counters.exchanges.total).toBe(6);
  });
});
