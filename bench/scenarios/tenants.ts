import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { firstValueFrom } from 'rxjs';
import {
  PlatformAuthModule,
  PlatformHttpService,
  PlatformTenants,
  type PlatformTenantsOptions,
} from 'nestjs-platform-auth';
import type { EmulatorCounters } from 'nestjs-platform-auth/testing';
import { BenchChild } from '../support/child.js';
import { alternateRequests, medianRatio, p99Ratio } from '../support/interleave.js';
import { formatNumber, progress, type Report } from '../support/report.js';
import { median, settledHeapUsed, spread } from '../support/stats.js';
import { makeTenantKeys, tenantIntegrations, tenantSettings, type TenantKeys } from '../support/tenant-keys.js';

const KB = 1024;
const MB = 1024 * 1024;

export interface TenantSizes {
  readonly tenants: number;
  readonly maxResident: number;
  /** Distinct RSA keys (see `makeTenantKeys`); at least `maxResident`. */
  readonly keys: number;
  /** Tenants called at once while they pass through. */
  readonly inFlight: number;
  readonly warmRounds: number;
  readonly requestsPerRound: number;
  readonly coldRounds: number;
}

interface Bench {
  readonly url: string;
  readonly keys: TenantKeys;
  readonly tenants: PlatformTenants;
  /** The `forRoot` integration beside them: the one past the last tenant. */
  readonly root: INestApplicationContext;
}

/**
 * Scenario 9. Tenants (`forTenants`) against a single `forRoot` integration, on one emulator in a child process (so
 * this process's heap holds the library's state only): heap as 10,000 tenants each call once through a registry of
 * 1,000 resident; a warm tenant's request; a cold tenant's first call.
 */
export async function measureTenants(report: Report, sizes: TenantSizes): Promise<void> {
  progress(`tenants: ${formatNumber(sizes.keys)} RSA keys for ${formatNumber(sizes.tenants)} tenants (+1 forRoot)`);
  const keys = await makeTenantKeys(sizes.tenants + 1, sizes.keys);
  const { child: emulator, hello } = await BenchChild.start<{ url: string }>('./emulator.child.js');
  const contexts: INestApplicationContext[] = [];
  try {
    await emulator.request({ command: 'register', integrations: tenantIntegrations(keys) });
    const open = async (options: PlatformTenantsOptions): Promise<PlatformTenants> => {
      const context = await NestFactory.createApplicationContext(PlatformAuthModule.forTenants(options), {
        logger: ['error'],
      });
      contexts.push(context);
      return context.get(PlatformTenants);
    };
    const resolve = (tenantId: string) => Promise.resolve(tenantSettings(hello.url, keys, Number(tenantId.slice(1))));
    // Warms the code paths (compiled code is heap too) in a registry of its own, dropped before the first reading.
    const warm = await open({ resolve, maxResident: sizes.maxResident });
    await callEach(warm, range(sizes.tenants - 50, sizes.tenants), sizes.inFlight);
    await contexts.pop()!.close();

    const tenants = await open({ resolve, maxResident: sizes.maxResident });
    const root = await NestFactory.createApplicationContext(
      PlatformAuthModule.forRoot(tenantSettings(hello.url, keys, sizes.tenants)),
      { logger: ['error'] },
    );
    contexts.push(root);
    const bench: Bench = { url: hello.url, keys, tenants, root };
    await measureHeap(bench, report, sizes);
    await measureWarm(bench, report, sizes);
    await measureCold(bench, report, sizes);
    const counters = await emulator.request<EmulatorCounters>({ command: 'counters' });
    report.exactly(
      'tenants.rejected',
      'tenants: token requests or calls the platform refused',
      counters.exchanges.rejected + counters.apiCalls.unauthorized + counters.apiCalls.forbidden,
      0,
      'emulator counter',
    );
  } finally {
    for (const context of contexts.reverse()) await context.close();
    await emulator.close();
  }
}

async function measureHeap(bench: Bench, report: Report, sizes: TenantSizes): Promise<void> {
  const { tenants } = bench;
  const before = await settledHeap();
  progress(
    `tenants: ${formatNumber(sizes.tenants)} tenants each call once, ${sizes.inFlight} at a time, maxResident ${formatNumber(sizes.maxResident)}`,
  );
  const startedAt = performance.now();
  let answered = await callEach(tenants, range(0, sizes.maxResident), sizes.inFlight);
  const atResident = await settledHeap();
  const readings = [atResident];
  for (let from = sizes.maxResident; from < sizes.tenants; from += sizes.maxResident) {
    answered += await callEach(tenants, range(from, Math.min(sizes.tenants, from + sizes.maxResident)), sizes.inFlight);
    readings.push(await settledHeap());
    progress(
      `  ${formatNumber(Math.min(sizes.tenants, from + sizes.maxResident))} tenants, heap ${((readings.at(-1)! - atResident) / MB).toFixed(2)} MB over the first ${formatNumber(sizes.maxResident)}`,
    );
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const status = tenants.status();
  report.exactly('tenants.answered', 'tenants: calls answered for their own tenant', answered, sizes.tenants, 'caller');
  report.exactly('tenants.resident', 'tenants: resident at the end', status.resident, sizes.maxResident, 'status()');
  report.atMost(
    'tenants.heapFlat',
    `tenants: heap after ${formatNumber(sizes.tenants)} tenants, after GC`,
    readings.at(-1)! / atResident,
    1.1,
    { baseline: `heap after the first ${formatNumber(sizes.maxResident)}` },
  );
  const perTenantKb = (atResident - before) / sizes.maxResident / KB;
  report.below(
    'tenants.heapPerResident',
    'tenants: heap per resident tenant (own key), after GC',
    perTenantKb,
    64,
    'KB',
    `heap before the first tenant, / ${formatNumber(sizes.maxResident)}`,
  );
  report.detail('tenants.heap', {
    beforeMb: round2(before / MB),
    atResidentMb: round2(atResident / MB),
    byThousandMb: readings.map((reading) => round2(reading / MB)),
    tenantsPerSecond: Math.round(sizes.tenants / seconds),
    evictions: status.evictions,
  });
}

/** A warm tenant's request (its `get` included, as an application asks per unit of work) against `forRoot`'s. */
async function measureWarm(bench: Bench, report: Report, sizes: TenantSizes): Promise<void> {
  const warmId = `t${sizes.tenants - 1}`;
  const rootHttp = bench.root.get(PlatformHttpService);
  progress(`tenants: a warm tenant's request against forRoot's, ${sizes.warmRounds} rounds`);
  const results = await alternateRequests(
    [
      { name: 'forRoot', send: () => firstValueFrom(rootHttp.get('/api/billing')) },
      {
        name: 'tenant',
        send: async () => firstValueFrom((await bench.tenants.get(warmId)).http.get('/api/billing')),
      },
    ],
    { rounds: sizes.warmRounds, requestsPerRound: sizes.requestsPerRound, warmupRequests: 400 },
  );
  const root = results.get('forRoot')!;
  const tenant = results.get('tenant')!;
  const ratio = medianRatio(tenant, root);
  report.atMost('tenants.warm.median', 'tenants: warm tenant request, median latency', ratio.value, 1.05, {
    baseline: 'forRoot integration, same emulator',
    spread: ratio.spread,
  });
  const p99 = p99Ratio(tenant, root);
  report.info(
    'tenants.warm.p99',
    'tenants: warm tenant request, p99 latency',
    p99.value,
    `${p99.value.toFixed(3)}×`,
    'forRoot integration, same emulator',
    p99.spread,
  );
  report.detail('tenants.warm', {
    forRootMedianMs: root.pooled.median,
    tenantMedianMs: tenant.pooled.median,
  });
}

/**
 * Per round, interleaved: a fresh `forRoot` application's first call (exchange included; the module was built and its
 * key checked at start-up, untimed), and a tenant's first call since its eviction (resolve, checks, key, exchange).
 */
async function measureCold(bench: Bench, report: Report, sizes: TenantSizes): Promise<void> {
  progress(`tenants: a cold tenant's first call against a lone forRoot first call, ${sizes.coldRounds} rounds`);
  const lone: number[] = [];
  const cold: number[] = [];
  for (let round = 0; round <= sizes.coldRounds; round += 1) {
    // No token at boot (the start-up check's default takes one): the first call is timed with its exchange.
    const app = await NestFactory.createApplicationContext(
      PlatformAuthModule.forRoot({ ...tenantSettings(bench.url, bench.keys, sizes.tenants), startupCheck: 'off' }),
      { logger: ['error'] },
    );
    let loneMs: number;
    try {
      const http = app.get(PlatformHttpService);
      const startedAt = performance.now();
      await firstValueFrom(http.get('/api/billing'));
      loneMs = performance.now() - startedAt;
    } finally {
      await app.close();
    }
    // Evicted long ago: the first tenants passed through before the other 9,000.
    const tenantId = `t${round}`;
    const startedAt = performance.now();
    await firstValueFrom((await bench.tenants.get(tenantId)).http.get('/api/billing'));
    const coldMs = performance.now() - startedAt;
    if (round === 0) continue;
    lone.push(loneMs);
    cold.push(coldMs);
  }
  const ratios = cold.map((ms, i) => ms / lone[i]);
  report.info(
    'tenants.cold',
    "tenants: a cold tenant's first call, median latency",
    median(cold) / median(lone),
    `${(median(cold) / median(lone)).toFixed(2)}×`,
    "a lone forRoot integration's first call",
    spread(ratios),
  );
  report.detail('tenants.cold', { loneMs: lone, coldTenantMs: cold });
}

/** Calls each tenant once, `inFlight` at a time; how many answered as their own integration. */
async function callEach(tenants: PlatformTenants, indexes: readonly number[], inFlight: number): Promise<number> {
  let next = 0;
  let answered = 0;
  const lane = async (): Promise<void> => {
    while (next < indexes.length) {
      const index = indexes[next++];
      const tenant = await tenants.get(`t${index}`);
      const { data } = await firstValueFrom(tenant.http.get<{ machineId: string }>('/api/billing'));
      if (data.machineId === `machine-${index}`) answered += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return answered;
}

/** After evicted tenants finished stopping (closing sockets is asynchronous), the heap after GC. */
async function settledHeap(): Promise<number> {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
  return settledHeapUsed();
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
