import { randomBytes } from 'node:crypto';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { BenchChild } from '../support/child.js';
import { startRedis } from '../support/redis.js';
import { formatNumber, progress, type Report } from '../support/report.js';
import { makeTenantKeys, tenantIntegrations } from '../support/tenant-keys.js';

/** The emulator's default token lifetime, and a second past it: every cached token has expired. */
const PAST_LIFETIME_MS = 601_000;

/**
 * Scenario 10. A fleet of replica processes, each a `forTenants` registry of the same tenants on one redis-server:
 * every replica calls every tenant at once, at a cold start and again once the tokens expired. The emulator (in
 * this process, on the clock the replicas' clocks follow) counts the exchanges of each token lifetime.
 */
export async function measureTenantsFleet(
  report: Report,
  sizes: { replicas: number; tenants: number; inFlight: number },
): Promise<void> {
  const redis = await startRedis();
  const clock = new FakeClock(Date.now());
  const emulator = await PlatformEmulator.start({ now: () => clock.now() });
  const replicas: BenchChild[] = [];
  try {
    const keys = await makeTenantKeys(sizes.tenants, 1);
    emulator.registerIntegrations(tenantIntegrations(keys));
    const tokenStore = {
      url: redis.url,
      encryptionKey: randomBytes(32).toString('base64'),
      keyPrefix: `bench-tenants-${randomBytes(4).toString('hex')}:`,
      // Generous: a busy machine's slow round trip must not turn into a replica exchanging on its own.
      operationTimeoutMs: 5_000,
      lockTtlMs: 30_000,
      waitTimeoutMs: 60_000,
    };
    for (let i = 0; i < sizes.replicas; i += 1) {
      const { child } = await BenchChild.start('./tenants-replica.child.js');
      replicas.push(child);
      await child.request({ startMs: clock.now(), platformUrl: emulator.url, keys, tokenStore });
    }
    let failed = 0;
    const errors = new Set<string>();
    const lifetimes: number[] = [];
    for (const lifetime of [1, 2]) {
      progress(
        `tenants fleet: ${sizes.replicas} replicas × ${formatNumber(sizes.tenants)} tenants on redis-server, token lifetime ${lifetime}`,
      );
      if (lifetime > 1) {
        clock.advance(PAST_LIFETIME_MS);
        await Promise.all(replicas.map((replica) => replica.request({ command: 'advance', ms: PAST_LIFETIME_MS })));
      }
      emulator.resetCounters();
      const results = await Promise.all(
        replicas.map((replica) =>
          replica.request<{ failed: number; errors: string[] }>({ command: 'call', inFlight: sizes.inFlight }),
        ),
      );
      for (const result of results) {
        failed += result.failed;
        for (const message of result.errors) errors.add(message);
      }
      lifetimes.push(emulator.counters.exchanges.total);
      report.exactly(
        `tenantsFleet.lifetime${lifetime}`,
        `tenants fleet, ${sizes.replicas} replicas × ${formatNumber(sizes.tenants)} tenants: exchanges in token lifetime ${lifetime}`,
        emulator.counters.exchanges.total,
        sizes.tenants,
        'emulator counter',
      );
    }
    report.exactly(
      'tenantsFleet.failed',
      `tenants fleet: calls that failed (${formatNumber(2 * sizes.replicas * sizes.tenants)} in all)`,
      failed,
      0,
      'replicas',
    );
    report.detail('tenantsFleet', { exchangesByLifetime: lifetimes, errors: [...errors] });
  } finally {
    await Promise.all(replicas.map((replica) => replica.close()));
    await emulator.close();
    await redis.stop();
  }
}
