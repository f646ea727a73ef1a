import type { INestApplicationContext } from '@nestjs/common';
import { Agent as HttpAgent } from 'node:http';
import { HttpService } from '@nestjs/axios';
import { NestFactory } from '@nestjs/core';
import axios from 'axios';
import { firstValueFrom } from 'rxjs';
import { Agent, getGlobalDispatcher, request, setGlobalDispatcher, type Dispatcher } from 'undici';
import {
  PlatformAuthInterceptor,
  PlatformAuthModule,
  PlatformFetch,
  TokenProvider,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import type { EmulatorCounters } from 'nestjs-platform-auth/testing';
import { BenchChild } from '../support/child.js';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

/** One of the library's clients, opened on an app: `send` sends `GET url`, resolves with the status. */
interface Client {
  readonly id: string;
  readonly name: string;
  open(app: INestApplicationContext): { send(url: string): Promise<number>; close(): void };
}

const drainedStatus = async (response: Response): Promise<number> => (await response.arrayBuffer(), response.status);

const CLIENTS: readonly Client[] = [
  {
    id: 'http',
    name: 'module HttpService',
    open(app) {
      const http = app.get(HttpService);
      return { send: (url) => firstValueFrom(http.get(url)).then((r) => r.status), close: () => undefined };
    },
  },
  {
    id: 'interceptor',
    name: 'axios + interceptor',
    open(app) {
      // Sockets of its own, destroyed with it: the global agent's idle ones would outlive the app.
      const httpAgent = new HttpAgent({ keepAlive: true });
      const instance = axios.create({ httpAgent });
      const detach = app.get(PlatformAuthInterceptor).attach(instance);
      return {
        send: (url) => instance.get(url).then((r) => r.status),
        close: () => {
          detach();
          httpAgent.destroy();
        },
      };
    },
  },
  {
    id: 'platformFetch',
    name: 'PlatformFetch',
    open(app) {
      const platformFetch = app.get(PlatformFetch);
      return { send: (url) => platformFetch.fetch(url).then(drainedStatus), close: () => undefined };
    },
  },
  {
    id: 'dispatcher',
    name: 'fetch + dispatcher',
    open(app) {
      const { dispatcher } = app.get(PlatformFetch);
      return { send: (url) => fetch(url, { dispatcher }).then(drainedStatus), close: () => undefined };
    },
  },
  {
    id: 'request',
    name: 'request + dispatcher',
    open(app) {
      const dispatcher = app.get(PlatformFetch).dispatcher as unknown as Dispatcher;
      return {
        send: (url) => request(url, { dispatcher }).then(async (r) => (await r.body.dump(), r.statusCode)),
        close: () => undefined,
      };
    },
  },
];

export interface StormSizes {
  readonly rounds: number;
  /** Concurrent calls refused with a revoked token, per round. */
  readonly requests: number;
  /** Concurrent first calls on a cold module, per round. */
  readonly coldCalls: number;
}

/**
 * Scenario 4, for each of the library's clients. The token is revoked on the platform, then `requests` calls go out
 * at once: every one gets a 401, and together they must cause one renewal and one re-send each. The emulator counts
 * both, so the figures do not depend on the library's own bookkeeping. Baseline: the same batch with a valid token,
 * in the same round. Then `coldCalls` concurrent first calls on a cold module must share one exchange: those go to an
 * emulator in a child process, as each call may open a socket of its own and this process has 20,000 descriptors.
 */
export async function measureUnauthorizedStorm(
  platform: BenchPlatform,
  report: Report,
  sizes: StormSizes,
): Promise<void> {
  const url = `${platform.emulator.url}/api/billing`;
  const { child: emulator, hello } = await BenchChild.start<{ url: string }>('./emulator.child.js');
  try {
    const options = await emulator.request<PlatformAuthOptions>({ command: 'create', name: 'cold' });
    const cold: ColdPlatform = { emulator, url: `${hello.url}/api/billing`, options };
    for (const client of CLIENTS) {
      progress(
        `401 storm, ${client.name}: ${sizes.rounds} rounds of ${sizes.requests.toLocaleString('en-US')} concurrent requests after revocation, then ${sizes.coldCalls.toLocaleString('en-US')} cold first calls`,
      );
      await stormFor(client, platform, report, sizes, url);
      await coldCallsFor(client, cold, report, sizes);
    }
  } finally {
    await emulator.close();
  }
}

/** The emulator in a child process, and the module options of an integration registered on it. */
interface ColdPlatform {
  readonly emulator: BenchChild;
  readonly url: string;
  readonly options: PlatformAuthOptions;
}

async function stormFor(
  client: Client,
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; requests: number },
  url: string,
): Promise<void> {
  const app = await platform.createApp();
  const opened = client.open(app);
  try {
    const batch = async (): Promise<{ ms: number; ok: number }> => {
      const startedAt = performance.now();
      const statuses = await Promise.all(Array.from({ length: sizes.requests }, () => opened.send(url).catch(() => 0)));
      return { ms: performance.now() - startedAt, ok: statuses.filter((status) => status === 200).length };
    };
    await app.get(TokenProvider).getAccessToken();
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

    // The module's HttpService keeps the ids and labels it has always had; the other clients are named.
    const id = client.id === 'http' ? 'storm' : `storm.${client.id}`;
    const label = client.id === 'http' ? '401 storm' : `401 storm, ${client.name}`;
    const worstRenewals = renewals.find((n) => n !== 1) ?? 1;
    const worstResends = resends.find((n) => n !== sizes.requests) ?? sizes.requests;
    const n = sizes.requests.toLocaleString('en-US');
    report.exactly(
      `${id}.renewals`,
      `${label}: renewals for ${n} concurrent 401s (worst round)`,
      worstRenewals,
      1,
      'emulator counter',
    );
    report.exactly(
      `${id}.resends`,
      `${label}: re-sends for ${n} concurrent 401s (worst round)`,
      worstResends,
      sizes.requests,
      'emulator counter',
    );
    report.exactly(
      `${id}.failures`,
      `${label}: calls that did not end in 200 (all rounds)`,
      failedCalls.reduce((a, b) => a + b, 0),
      0,
      'caller',
    );
    const ratio = median(stormMs) / median(calmMs);
    report.info(
      `${id}.wall`,
      `${label}: wall time of the ${n} calls`,
      ratio,
      `${ratio.toFixed(2)}×`,
      'same batch, valid token',
      spread(stormMs.map((ms, i) => ms / calmMs[i])),
    );
    report.detail(id, {
      renewalsPerRound: renewals,
      resendsPerRound: resends,
      stormMs: stormMs.map(Math.round),
      calmMs: calmMs.map(Math.round),
    });
  } finally {
    opened.close();
    await app.close();
  }
}

/** `coldCalls` concurrent first calls through the client on a cold module, each round on a fresh one: one exchange. */
async function coldCallsFor(client: Client, cold: ColdPlatform, report: Report, sizes: StormSizes): Promise<void> {
  const exchanges: number[] = [];
  const failedCalls: number[] = [];
  const exchangesSoFar = async () =>
    (await cold.emulator.request<EmulatorCounters>({ command: 'counters' })).exchanges.total;
  // The global fetch (PlatformFetch's) keeps its idle sockets open after a module closes: 10,000 of them beside the
  // next client's would pass this process's descriptor limit. These rounds get a global dispatcher closed after them.
  const globalDispatcher = getGlobalDispatcher();
  const roundsDispatcher = new Agent();
  setGlobalDispatcher(roundsDispatcher);
  try {
    for (let round = 0; round < sizes.rounds; round += 1) {
      const app = await NestFactory.createApplicationContext(
        PlatformAuthModule.forRoot({ ...cold.options, startupCheck: 'off' }),
        { logger: ['error'] },
      );
      const opened = client.open(app);
      try {
        const before = await exchangesSoFar();
        const statuses = await Promise.all(
          Array.from({ length: sizes.coldCalls }, () => opened.send(cold.url).catch(() => 0)),
        );
        exchanges.push((await exchangesSoFar()) - before);
        failedCalls.push(statuses.filter((status) => status !== 200).length);
      } finally {
        opened.close();
        await app.close();
      }
    }
  } finally {
    setGlobalDispatcher(globalDispatcher);
    await roundsDispatcher.close();
  }
  const n = sizes.coldCalls.toLocaleString('en-US');
  report.exactly(
    `cold.${client.id}.exchanges`,
    `cold first calls, ${client.name}: exchanges for ${n} concurrent calls (worst round)`,
    exchanges.find((count) => count !== 1) ?? 1,
    1,
    'emulator counter',
  );
  report.exactly(
    `cold.${client.id}.failures`,
    `cold first calls, ${client.name}: calls that did not end in 200 (all rounds)`,
    failedCalls.reduce((a, b) => a + b, 0),
    0,
    'caller',
  );
}
