import { Agent } from 'node:http';
import { HttpService } from '@nestjs/axios';
import axios, { type AxiosAdapter } from 'axios';
import { firstValueFrom } from 'rxjs';
import { PlatformAuthInterceptor, TokenProvider } from 'nestjs-platform-auth';
import { startEchoServerInChild } from '../support/echo-server.js';
import {
  alternateBlocks,
  alternateRequests,
  cpuRatio,
  medianRatio,
  p99Ratio,
  type RatioEstimate,
  type VariantResult,
} from '../support/interleave.js';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';

export interface HttpOverheadSizes {
  readonly sequentialRounds: number;
  readonly requestsPerRound: number;
  readonly concurrentRounds: number;
  readonly perBlock: number;
  readonly inFlight: number;
}

const LIMIT = 1.05;
const GOAL = 1.02;
/** The module's HttpService sends through the library's own adapter: it must beat the stock service it replaces. */
const MODULE_LIMIT = 0.95;

/**
 * Scenario 1. Four clients send the same GET to the same loopback server: the module's HttpService, a plain
 * @nestjs/axios HttpService with the header hard-coded (the target's baseline), plain axios with the header hard-coded,
 * and a bare axios instance with the interceptor attached. Each has its own keep-alive agent, like the module's.
 */
export async function measureHttpOverhead(
  platform: BenchPlatform,
  report: Report,
  sizes: HttpOverheadSizes,
): Promise<void> {
  const echo = await startEchoServerInChild();
  const app = await platform.createApp({ allowedOrigins: [echo.url] });
  const agents: Agent[] = [];
  const keepAliveAgent = (): Agent => {
    const agent = new Agent({ keepAlive: true });
    agents.push(agent);
    return agent;
  };
  try {
    const url = `${echo.url}/api/resource`;
    const authorization = `Bearer ${await app.get(TokenProvider).getAccessToken()}`;
    const moduleHttp = app.get(HttpService);
    const plainHttp = new HttpService(
      axios.create({ httpAgent: keepAliveAgent(), headers: { Authorization: authorization } }),
    );
    const plainAxios = axios.create({ httpAgent: keepAliveAgent(), headers: { Authorization: authorization } });
    const twinAxios = axios.create({ httpAgent: keepAliveAgent(), headers: { Authorization: authorization } });
    const interceptedAxios = axios.create({ httpAgent: keepAliveAgent() });
    const detach = app.get(PlatformAuthInterceptor).attach(interceptedAxios);

    // Both authenticated clients must really be adding the token, or the comparison is void. The token is only on
    // the request as sent (configs show it redacted), so an adapter of our own records what it was given.
    const sent: unknown[] = [];
    const recording: AxiosAdapter = (config) => {
      sent.push(config.headers.Authorization);
      return Promise.resolve({ data: null, status: 200, statusText: 'OK', headers: {}, config });
    };
    await interceptedAxios.get(url, { adapter: recording });
    await firstValueFrom(moduleHttp.get(url, { adapter: recording }));
    if (sent.length !== 2 || sent.some((header) => header !== authorization))
      throw new Error('a client did not authorize the request');

    const allVariants = [
      { name: 'module HttpService', send: () => firstValueFrom(moduleHttp.get(url)) },
      { name: 'plain HttpService', send: () => firstValueFrom(plainHttp.get(url)) },
      { name: 'plain axios', send: () => plainAxios.get(url) },
      { name: 'axios + interceptor', send: () => interceptedAxios.get(url) },
      // Identical to plain axios: how far apart two equal clients measure is this run's resolution.
      { name: 'plain axios, twin', send: () => twinAxios.get(url) },
    ];
    // BENCH_HTTP_VARIANTS="module HttpService|plain HttpService" draws from those variants only (see the fetch
    // scenario's BENCH_FETCH_VARIANTS): how much of a ratio is the other variants' code evicting this one's.
    const chosen = process.env.BENCH_HTTP_VARIANTS?.split('|');
    const variants = chosen ? allVariants.filter((variant) => chosen.includes(variant.name)) : allVariants;

    progress(
      `HTTP overhead, sequential: ${sizes.sequentialRounds} rounds × ${sizes.requestsPerRound} requests, each by a variant drawn at random`,
    );
    const sequential = await alternateRequests(variants, {
      rounds: sizes.sequentialRounds,
      requestsPerRound: sizes.requestsPerRound,
      warmupRequests: 4_000,
      onRound: (round) => {
        if (round % 10 === 0) progress(`  round ${round}/${sizes.sequentialRounds}`);
      },
    });
    addFigures(report, 'sequential', 'sequential', sequential);

    const mode = `${sizes.inFlight} in flight`;
    progress(
      `HTTP overhead, ${mode}: ${sizes.concurrentRounds} rounds × ${variants.length} variants × 2 blocks of ${sizes.perBlock} requests`,
    );
    const concurrent = await alternateBlocks(variants, {
      rounds: sizes.concurrentRounds,
      perBlock: sizes.perBlock,
      inFlight: sizes.inFlight,
      warmupPerVariant: 2_000,
      onRound: (round) => {
        if (round % 10 === 0) progress(`  round ${round}/${sizes.concurrentRounds}`);
      },
    });
    addFigures(report, `concurrent${sizes.inFlight}`, mode, concurrent);
    detach();
  } finally {
    await app.close();
    for (const agent of agents) agent.destroy();
    await echo.close();
  }
}

function addFigures(report: Report, key: string, mode: string, results: Map<string, VariantResult>): void {
  const pairs = [
    { id: 'module', subject: 'module HttpService', baseline: 'plain HttpService', limit: MODULE_LIMIT },
    { id: 'interceptor', subject: 'axios + interceptor', baseline: 'plain axios', limit: LIMIT },
    { id: 'nest', subject: 'plain HttpService', baseline: 'plain axios' },
    { id: 'twin', subject: 'plain axios, twin', baseline: 'plain axios' },
  ];
  for (const pair of pairs) {
    const subject = results.get(pair.subject);
    const baseline = results.get(pair.baseline);
    if (!subject || !baseline) continue;
    const against = `${pair.baseline} + hard-coded header`;
    const label = `${pair.subject}, ${mode}`;
    add(
      report,
      `http.${key}.${pair.id}.median`,
      `${label}: median latency`,
      medianRatio(subject, baseline),
      against,
      pair.limit,
    );
    if (pair.id !== 'nest')
      add(
        report,
        `http.${key}.${pair.id}.p99`,
        `${label}: p99 latency`,
        p99Ratio(subject, baseline),
        against,
        pair.limit,
      );
    if (pair.id !== 'nest' && subject.cpuPerRequest) {
      add(
        report,
        `http.${key}.${pair.id}.cpu`,
        `${label}: client CPU per request`,
        cpuRatio(subject, baseline),
        against,
      );
    }
  }
  report.detail(`http.${key}`, Object.fromEntries([...results].map(([name, r]) => [name, describe(r)])));
}

function add(
  report: Report,
  id: string,
  label: string,
  estimate: RatioEstimate,
  baseline: string,
  limit?: number,
): void {
  if (limit !== undefined)
    report.atMost(id, label, estimate.value, limit, {
      baseline,
      spread: estimate.spread,
      goal: Math.min(limit, GOAL),
    });
  else report.info(id, label, estimate.value, `${estimate.value.toFixed(3)}×`, baseline, estimate.spread);
}

function describe(result: VariantResult): Record<string, number> {
  const cpu = result.cpuPerRequest;
  return {
    medianUs: round(result.pooled.median * 1000),
    p99Us: round(result.pooled.p99 * 1000),
    samples: result.pooled.count,
    ...(cpu && { cpuUsPerRequest: round(cpu.reduce((a, b) => a + b, 0) / cpu.length) }),
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
