import type { INestApplicationContext } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { firstValueFrom } from 'rxjs';
import { request, type Dispatcher } from 'undici';
import { PlatformFetch, TokenProvider } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

/** One of the library's clients, sending `GET /api/billing` to the platform; resolves with the status. */
interface Client {
  readonly id: string;
  readonly name: string;
  send(app: INestApplicationContext, url: string): Promise<number>;
}

const CLIENTS: readonly Client[] = [
  {
    id: 'http',
    name: 'module HttpService',
    send: (app, url) => firstValueFrom(app.get(HttpService).get(url)).then((r) => r.status),
  },
  {
    id: 'platformFetch',
    name: 'PlatformFetch',
    send: (app, url) =>
      app
        .get(PlatformFetch)
        .fetch(url)
        .then(async (r) => (await r.arrayBuffer(), r.status)),
  },
  {
    id: 'dispatcher',
    name: 'fetch + dispatcher',
    send: (app, url) =>
      fetch(url, { dispatcher: app.get(PlatformFetch).dispatcher }).then(
        async (r) => (await r.arrayBuffer(), r.status),
      ),
  },
  {
    id: 'request',
    name: 'request + dispatcher',
    send: (app, url) =>
      request(url, { dispatcher: app.get(PlatformFetch).dispatcher as unknown as Dispatcher }).then(
        async (r) => (await r.body.dump(), r.statusCode),
      ),
  },
];

/**
 * Scenario 4, for each of the library's clients. The token is revoked on the platform, then `requests` calls go out
 * at once: every one gets a 401, and together they must cause one renewal and one re-send each. The emulator counts
 * both, so the figures do not depend on the library's own bookkeeping. Baseline: the same batch with a valid token,
 * in the same round. Then `requests` concurrent first calls on a cold module must share one exchange.
 */
export async function measureUnauthorizedStorm(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; requests: number },
): Promise<void> {
  const url = `${platform.emulator.url}/api/billing`;
  for (const client of CLIENTS) {
    progress(
      `401 storm, ${client.name}: ${sizes.rounds} rounds of ${sizes.requests.toLocaleString('en-US')} concurrent requests after revocation, then as many cold first calls`,
    );
    await stormFor(client, platform, report, sizes, url);
    await coldCallsFor(client, platform, report, sizes, url);
  }
}

async function stormFor(
  client: Client,
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; requests: number },
  url: string,
): Promise<void> {
  const app = await platform.createApp();
  try {
    const batch = async (): Promise<{ ms: number; ok: number }> => {
      const startedAt = performance.now();
      const statuses = await Promise.all(
        Array.from({ length: sizes.requests }, () => client.send(app, url).catch(() => 0)),
      );
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
    await app.close();
  }
}

/** `requests` concurrent first calls through the client on a cold module, each round on a fresh one: one exchange. */
async function coldCallsFor(
  client: Client,
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; requests: number },
  url: string,
): Promise<void> {
  const exchanges: number[] = [];
  const failedCalls: number[] = [];
  for (let round = 0; round < sizes.rounds; round += 1) {
    const app = await platform.createApp();
    try {
      const before = platform.emulator.counters.exchanges.total;
      const statuses = await Promise.all(
        Array.from({ length: sizes.requests }, () => client.send(app, url).catch(() => 0)),
      );
      exchanges.push(platform.emulator.counters.exchanges.total - before);
      failedCalls.push(statuses.filter((status) => status !== 200).length);
    } finally {
      await app.close();
    }
  }
  const n = sizes.requests.toLocaleString('en-US');
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
