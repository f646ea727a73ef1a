import { TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

const LIMIT_NS = 1_000;

/**
 * Scenario 2. `getAccessToken()` on a cached token, awaited as callers do, in batches; the baseline is awaiting an
 * already resolved promise of the same string, which is the floor any promise-returning getter can reach.
 */
export async function measureTokenCache(
  platform: BenchPlatform,
  report: Report,
  sizes: { batches: number; callsPerBatch: number },
  /** The same measure on a module configured otherwise (the shared store, say), reported under its own ids. */
  variant?: { id: string; label: string; options: Partial<PlatformAuthOptions> },
): Promise<void> {
  const id = variant ? `token.cached.${variant.id}` : 'token.cached';
  const label = variant ? `getAccessToken(), cached, ${variant.label}` : 'getAccessToken(), cached';
  const app = await platform.createApp(variant?.options);
  try {
    const tokens = app.get(TokenProvider);
    const cached = await tokens.getAccessToken();
    const floor = (): Promise<string> => Promise.resolve(cached);
    progress(`${label}: ${sizes.batches} batches × ${sizes.callsPerBatch.toLocaleString('en-US')} calls`);

    // Every result is used, so no call can be optimised away; the total also shows that no renewal swapped tokens.
    let sink = 0;
    const batch = async (get: () => Promise<string>): Promise<number> => {
      const startedAt = process.hrtime.bigint();
      for (let i = 0; i < sizes.callsPerBatch; i += 1) sink += (await get()).length;
      return Number(process.hrtime.bigint() - startedAt) / sizes.callsPerBatch;
    };
    await batch(() => tokens.getAccessToken());
    await batch(floor);
    sink = 0;

    const providerNs: number[] = [];
    const floorNs: number[] = [];
    for (let i = 0; i < sizes.batches; i += 1) {
      providerNs.push(await batch(() => tokens.getAccessToken()));
      floorNs.push(await batch(floor));
    }
    if (sink !== 2 * sizes.batches * sizes.callsPerBatch * cached.length)
      throw new Error('getAccessToken() returned a token of another length mid-run');

    const perCall = median(providerNs);
    report.below(
      `${id}.ns`,
      `${label}: median ns per call (awaited)`,
      perCall,
      LIMIT_NS,
      'ns',
      'absolute',
      spread(providerNs),
    );
    report.info(
      `${id}.vsResolved`,
      `${label}: time per call`,
      perCall / median(floorNs),
      `${(perCall / median(floorNs)).toFixed(2)}×`,
      'await Promise.resolve(token)',
      spread(providerNs.map((ns, i) => ns / floorNs[i])),
    );
    report.detail(id, {
      providerNsPerBatch: providerNs.map(Math.round),
      resolvedNsPerBatch: floorNs.map(Math.round),
    });
  } finally {
    await app.close();
  }
}
