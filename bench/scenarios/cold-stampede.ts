import { TokenProvider } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, quantile, spread } from '../support/stats.js';

/**
 * Scenario 3. `callers` concurrent first calls on a fresh module must share one exchange. Their latency is set
 * against one lone cold call on another fresh module, measured alternately in the same rounds.
 */
export async function measureColdStampede(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; callers: number },
): Promise<void> {
  progress(
    `cold stampede: ${sizes.rounds} rounds of ${sizes.callers.toLocaleString('en-US')} concurrent first calls, each next to one lone first call`,
  );
  const exchanges: number[] = [];
  const lone: number[] = [];
  const p50: number[] = [];
  const p99: number[] = [];
  // The first round only warms the JIT and the sockets' code paths.
  for (let round = 0; round <= sizes.rounds; round += 1) {
    const loneMs = await loneFirstCall(platform);
    const stampede = await stampedeOnce(platform, sizes.callers);
    if (round === 0) continue;
    lone.push(loneMs);
    exchanges.push(stampede.exchanges);
    p50.push(stampede.p50);
    p99.push(stampede.p99);
  }
  const worst = exchanges.find((n) => n !== 1) ?? 1;
  report.exactly(
    'stampede.exchanges',
    `cold stampede: exchanges for ${sizes.callers.toLocaleString('en-US')} concurrent first calls (worst round)`,
    worst,
    1,
    'emulator counter',
  );
  const loneMedian = median(lone);
  report.info(
    'stampede.p50',
    'cold stampede: p50 latency',
    median(p50) / loneMedian,
    `${(median(p50) / loneMedian).toFixed(2)}×`,
    'one lone first call (one exchange)',
    spread(p50.map((v, i) => v / lone[i])),
  );
  report.info(
    'stampede.p99',
    'cold stampede: p99 latency',
    median(p99) / loneMedian,
    `${(median(p99) / loneMedian).toFixed(2)}×`,
    'one lone first call (one exchange)',
    spread(p99.map((v, i) => v / lone[i])),
  );
  report.detail('stampede', {
    exchangesPerRound: exchanges,
    loneMs: lone.map(round2),
    p50Ms: p50.map(round2),
    p99Ms: p99.map(round2),
    // What each extra caller adds to the slowest ones: the cost of queueing on the shared exchange.
    p99MicrosPerCallerOverLone: round2(((median(p99) - loneMedian) / sizes.callers) * 1000),
  });
}

async function loneFirstCall(platform: BenchPlatform): Promise<number> {
  const app = await platform.createApp();
  try {
    const startedAt = performance.now();
    await app.get(TokenProvider).getAccessToken();
    return performance.now() - startedAt;
  } finally {
    await app.close();
  }
}

async function stampedeOnce(
  platform: BenchPlatform,
  callers: number,
): Promise<{ exchanges: number; p50: number; p99: number }> {
  const app = await platform.createApp();
  try {
    const tokens = app.get(TokenProvider);
    const before = platform.emulator.counters.exchanges.total;
    const latencies = new Float64Array(callers);
    const calls: Promise<void>[] = [];
    for (let i = 0; i < callers; i += 1) {
      const startedAt = performance.now();
      calls.push(
        tokens.getAccessToken().then(() => {
          latencies[i] = performance.now() - startedAt;
        }),
      );
    }
    await Promise.all(calls);
    latencies.sort();
    return {
      exchanges: platform.emulator.counters.exchanges.total - before,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
    };
  } finally {
    await app.close();
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
