import axios, { type AxiosAdapter } from 'axios';
import { PlatformAuthInterceptor } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { formatNumber, progress, type Report } from '../support/report.js';
import { settledHeapUsed } from '../support/stats.js';

const LIMIT_MB = 5;
const MB = 1024 * 1024;

/**
 * Scenario 6. A million authenticated requests through the interceptor, answered in-process by an axios adapter so
 * the run measures the library's retention, not sockets'. Heap is read after forced GC before the run and at each
 * checkpoint; growth is the last reading minus the first.
 */
export async function measureMemory(
  platform: BenchPlatform,
  report: Report,
  sizes: { requests: number; checkpoints: number; inFlight: number },
): Promise<void> {
  const app = await platform.createApp();
  try {
    let authorized = 0;
    const adapter: AxiosAdapter = (config) => {
      if (config.headers.has('Authorization')) authorized += 1;
      return Promise.resolve({ data: {}, status: 200, statusText: 'OK', headers: {}, config, request: {} });
    };
    const instance = axios.create({ baseURL: platform.emulator.url, adapter });
    const detach = app.get(PlatformAuthInterceptor).attach(instance);

    const send = async (count: number): Promise<void> => {
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < count) {
          next += 1;
          await instance.get('/api/billing');
        }
      };
      await Promise.all(Array.from({ length: sizes.inFlight }, lane));
    };
    await send(20_000);
    authorized = 0;

    const perCheckpoint = sizes.requests / sizes.checkpoints;
    const baseline = settledHeapUsed();
    const readings = [baseline];
    progress(
      `memory: ${formatNumber(sizes.requests)} requests through the interceptor, heap after GC every ${formatNumber(perCheckpoint)}`,
    );
    const startedAt = performance.now();
    for (let i = 1; i <= sizes.checkpoints; i += 1) {
      await send(perCheckpoint);
      readings.push(settledHeapUsed());
      progress(
        `  ${formatNumber(i * perCheckpoint)} requests, heap ${((readings.at(-1)! - baseline) / MB).toFixed(2)} MB over the start`,
      );
    }
    const seconds = (performance.now() - startedAt) / 1000;
    detach();

    report.exactly(
      'memory.authorized',
      `memory: requests that carried the token`,
      authorized,
      sizes.requests,
      'adapter',
    );
    const growthMb = (readings.at(-1)! - baseline) / MB;
    report.below(
      'memory.growth',
      `memory: heap growth after ${formatNumber(sizes.requests)} requests, after GC`,
      growthMb,
      LIMIT_MB,
      'MB',
      'heap after GC before the run',
    );
    report.detail('memory', {
      baselineMb: round2(baseline / MB),
      growthMbAtCheckpoints: readings.slice(1).map((r) => round2((r - baseline) / MB)),
      requestsPerSecond: Math.round(sizes.requests / seconds),
    });
  } finally {
    await app.close();
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
