import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import type { BenchPlatform } from '../support/platform.js';
import { startRedis } from '../support/redis.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';
import { measureTokenCache } from './token-cache.js';

const CHILD = fileURLToPath(new URL('../support/fleet-replica.child.js', import.meta.url));
/** Inside every replica's renewal window (60 s before a 600 s token's expiry, less up to 10 % jitter). */
const INTO_RENEWAL_MS = 547_000;

type Reply = { token: string; ms: number } | { error: string } | { done: true } | { ready: true };

class ReplicaProcess {
  private constructor(private readonly child: ChildProcess) {}

  static async start(setup: { startMs: number; options: PlatformAuthOptions }): Promise<ReplicaProcess> {
    const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const replica = new ReplicaProcess(child);
    child.send(setup);
    await replica.reply();
    return replica;
  }

  async get(): Promise<{ token: string; ms: number }> {
    this.child.send({ command: 'get' });
    const reply = await this.reply();
    if ('error' in reply) throw new Error(`a replica's getAccessToken() failed: ${reply.error}`);
    return reply as { token: string; ms: number };
  }

  async advance(ms: number): Promise<void> {
    this.child.send({ command: 'advance', ms });
    await this.reply();
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }

  private reply(): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`a replica process exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (message) => {
        this.child.off('exit', onExit);
        resolve(message as Reply);
      });
    });
  }
}

/** Exchanges a fleet of `size` replica processes makes at a cold start and at one renewal. */
async function fleetExchanges(
  emulator: PlatformEmulator,
  clock: FakeClock,
  options: PlatformAuthOptions,
  size: number,
): Promise<{ cold: number; renewal: number }> {
  const replicas = await Promise.all(
    Array.from({ length: size }, () => ReplicaProcess.start({ startMs: clock.now(), options })),
  );
  try {
    emulator.resetCounters();
    const first = await Promise.all(replicas.map((r) => r.get()));
    const cold = emulator.counters.exchanges.total;

    clock.advance(INTO_RENEWAL_MS);
    await Promise.all(replicas.map((r) => r.advance(INTO_RENEWAL_MS)));
    // The current token is served while one renewal runs in the background; wait until every replica has the next.
    await Promise.all(replicas.map((r) => r.get()));
    for (;;) {
      const now = await Promise.all(replicas.map((r) => r.get()));
      if (now.every((result, i) => result.token !== first[i].token)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { cold, renewal: emulator.counters.exchanges.total - cold };
  } finally {
    await Promise.all(replicas.map((r) => r.close()));
  }
}

/**
 * Scenario 8. The shared token store. A fleet of N replica processes (one module each), cold and at a
 * renewal, with and without the store: exchanges per token lifetime. In-process: a cold first call's latency when
 * another replica makes the exchange, against a lone first call that exchanges itself; and the cached-token measure
 * again with the store configured (it must not touch the store).
 */
export async function measureSharedStore(
  platform: BenchPlatform,
  report: Report,
  sizes: { fleets: readonly number[]; waitRounds: number; cache: { batches: number; callsPerBatch: number } },
): Promise<void> {
  const redis = await startRedis();
  const clock = new FakeClock(Date.now());
  const emulator = await PlatformEmulator.start({ now: () => clock.now() });
  try {
    const integration = await emulator.createIntegration({ name: 'bench fleet' });
    const withStore = (): PlatformAuthOptions => storeOptions(integration, redis.url);
    for (const size of sizes.fleets) {
      progress(`fleet of ${size} replica processes: cold start and one renewal, without and with the store`);
      const without = await fleetExchanges(emulator, clock, { ...integration.moduleOptions }, size);
      const shared = await fleetExchanges(emulator, clock, withStore(), size);
      report.info(
        `store.fleet${size}.without`,
        `fleet of ${size} processes without a store: exchanges at cold start / at renewal`,
        without.cold + without.renewal,
        `${without.cold} / ${without.renewal}`,
        'emulator counter',
      );
      report.exactly(
        `store.fleet${size}.cold`,
        `fleet of ${size} processes with the store: exchanges at cold start`,
        shared.cold,
        1,
        'emulator counter',
      );
      report.exactly(
        `store.fleet${size}.renewal`,
        `fleet of ${size} processes with the store: exchanges at renewal`,
        shared.renewal,
        1,
        'emulator counter',
      );
    }
    // In-process replicas keep real time: the bench platform's emulator, not the fleet's fake-clock one.
    await measureColdWait(platform.integration, redis.url, report, sizes.waitRounds);
    await measureTokenCache(platform, report, sizes.cache, {
      id: 'store',
      label: 'with the store configured',
      options: storeOptions(platform.integration, redis.url),
    });
  } finally {
    await emulator.close();
    await redis.stop();
  }
}

function storeOptions(integration: EmulatedIntegration, url: string): PlatformAuthOptions {
  return {
    ...integration.moduleOptions,
    tokenStore: {
      url,
      encryptionKey: randomBytes(32).toString('base64'),
      keyPrefix: `bench-${randomBytes(4).toString('hex')}:`,
    },
  };
}

/** Per round: two fresh replicas (in this process) first-call at once; the later one waited for the other's token. */
async function measureColdWait(
  integration: EmulatedIntegration,
  url: string,
  report: Report,
  rounds: number,
): Promise<void> {
  progress(`cold first call waiting on another replica's exchange: ${rounds} rounds`);
  // Cold replicas: the first call is what is timed, not a token acquired at boot.
  const app = (options: PlatformAuthOptions) =>
    NestFactory.createApplicationContext(PlatformAuthModule.forRoot({ startupCheck: 'off', ...options }), {
      logger: ['error'],
    });
  const timed = async (tokens: TokenProvider): Promise<number> => {
    const startedAt = performance.now();
    await tokens.getAccessToken();
    return performance.now() - startedAt;
  };
  const lone: number[] = [];
  const waiter: number[] = [];
  const reader: number[] = [];
  for (let round = 0; round <= rounds; round += 1) {
    const alone = await app({ ...integration.moduleOptions });
    const options = storeOptions(integration, url);
    const pair = await Promise.all([app(options), app(options)]);
    const late = await app(options);
    try {
      const loneMs = await timed(alone.get(TokenProvider));
      const [a, b] = await Promise.all(pair.map((p) => timed(p.get(TokenProvider))));
      const lateMs = await timed(late.get(TokenProvider));
      if (round === 0) continue; // warms the JIT, the sockets and the scripts' cache in Redis
      lone.push(loneMs);
      waiter.push(Math.max(a, b));
      reader.push(lateMs);
    } finally {
      await Promise.all([alone, ...pair, late].map((context) => context.close()));
    }
  }
  const addedMs = waiter.map((ms, i) => ms - lone[i]);
  report.info(
    'store.coldWait.added',
    'cold first call that waits on another replica: added latency',
    median(addedMs),
    `${median(addedMs).toFixed(1)} ms`,
    'a lone first call that exchanges itself',
    spread(addedMs),
  );
  report.info(
    'store.coldRead',
    'cold first call finding the token in the store: latency',
    median(reader) / median(lone),
    `${(median(reader) / median(lone)).toFixed(2)}×`,
    'a lone first call that exchanges itself',
    spread(reader.map((ms, i) => ms / lone[i])),
  );
  report.detail('store.coldWait', { loneMs: lone, waiterMs: waiter, readerMs: reader });
}
