import { HttpService } from '@nestjs/axios';
import { firstValueFrom } from 'rxjs';
import { TokenProvider } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

/**
 * Scenario 4. The token is revoked on the platform, then `requests` calls go out at once through the module's
 * HttpService: every one gets a 401, and together they must cause one renewal and one re-send each. The emulator
 * counts both, so the figures do not depend on the library's own bookkeeping. Baseline: the same batch with a
 * valid token, in the same round.
 */
export async function measureUnauthorizedStorm(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; requests: number },
): Promise<void> {
  progress(
    `401 storm: ${sizes.rounds} rounds of ${sizes.requests.toLocaleString('en-US')} concurrent requests after revocation`,
  );
  const app = await platform.createApp();
  try {
    const http = app.get(HttpService);
    const tokens = app.get(TokenProvider);
    const batch = async (): Promise<{ ms: number; ok: number }> => {
      const startedAt = performance.now();
      const statuses = await Promise.all(
        Array.from({ length: sizes.requests }, () =>
          firstValueFrom(http.get('/api/billing')).then(
            (r) => r.status,
            () => 0,
          ),
        ),
      );
      return { ms: performance.now() - startedAt, ok: statuses.filter((status) => status === 200).length };
    };
    await tokens.getAccessToken();
    await batch();

    const renewals: number[] = [];
    const resends: number[] = [];
    const failedCalls: number[] = [];
    const stormMs: number[] = [];
    const calmMs: number[] = [];
    for (let round = 0; round < sizes.rounds; round += 1) {
      calmMs.push((await batch()).ms);
      platform.emulator.revokeAllTokens();
      const before = platform.emulator.counters;
      const storm = await batch();
      const after = platform.emulator.counters;
      stormMs.push(storm.ms);
      renewals.push(after.exchanges.total - before.exchanges.total);
      resends.push(after.apiCalls.total - before.apiCalls.total - sizes.requests);
      failedCalls.push(sizes.requests - storm.ok);
    }

    const worstRenewals = renewals.find((n) => n !== 1) ?? 1;
    const worstResends = resends.find((n) => n !== sizes.requests) ?? sizes.requests;
    const n = sizes.requests.toLocaleString('en-US');
    report.exactly(
      'storm.renewals',
      `401 storm: renewals for ${n} concurrent 401s (worst round)`,
      worstRenewals,
      1,
      'emulator counter',
    );
    report.exactly(
      'storm.resends',
      `401 storm: re-sends for ${n} concurrent 401s (worst round)`,
      worstResends,
      sizes.requests,
      'emulator counter',
    );
    report.exactly(
      'storm.failures',
      `401 storm: calls that did not end in 200 (all rounds)`,
      failedCalls.reduce((a, b) => a + b, 0),
      0,
      'caller',
    );
    const ratio = median(stormMs) / median(calmMs);
    report.info(
      'storm.wall',
      `401 storm: wall time of the ${n} calls`,
      ratio,
      `${ratio.toFixed(2)}×`,
      'same batch, valid token',
      spread(stormMs.map((ms, i) => ms / calmMs[i])),
    );
    report.detail('storm', {
      renewalsPerRound: renewals,
      resendsPerRound: resends,
      stormMs: stormMs.map(Math.round),
      calmMs: calmMs.map(Math.round),
    });
  } finally {
    await app.close();
  }
}
