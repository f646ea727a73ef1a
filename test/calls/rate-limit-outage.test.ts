import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { ChildReplica } from '../support/child-replica.js';
import { until, useRedisServer } from '../support/redis-server.js';

/**
 * A fleet of replica processes sharing one limit through a real redis-server, calling the emulator as fast as their
 * turns allow, while Redis goes away and comes back. The emulator counts each request when it arrives, in a sliding
 * second: the platform's count. No second may hold more than the limit, and calls keep flowing in every phase.
 */
const CHILD = fileURLToPath(new URL('./rate-outage-replica.child.mjs', import.meta.url));
const REPLICAS = 3;
const IN_FLIGHT = 4;
/** How long each phase runs at least: long enough for the switch's pause (about two windows) and a few seconds on. */
const PHASE_MS = 4_000;

interface Counts {
  ok: number;
  otherStatus: number;
  failed: number;
  errors: string[];
}

/** A replica process: `PlatformAuthModule.forRoot` on the built package; an answer with `error` is a failure. */
class Replica {
  private constructor(private readonly process: ChildReplica) {}

  static async spawn(): Promise<Replica> {
    return new Replica(await ChildReplica.spawn(CHILD));
  }

  async ask<T>(command: string, args: Record<string, unknown> = {}): Promise<T> {
    const result = await this.process.ask<unknown>(command, args);
    if (typeof result === 'object' && result !== null && 'error' in result) throw new Error(String(result.error));
    return result as T;
  }

  kill(): void {
    this.process.kill();
  }
}

const redis = useRedisServer();
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
const replicas: Replica[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  replicas.push(...(await Promise.all(Array.from({ length: REPLICAS }, () => Replica.spawn()))));
});

afterAll(async () => {
  for (const replica of replicas) replica.kill();
  await platform?.close();
});

/** Calls the platform accepted so far: counted when they arrived. */
function arrived(): number {
  return platform.counters.apiCalls.ok;
}

/**
 * Runs until `PHASE_MS` has passed and `ready` holds, sampling the emulator's count: how many calls arrived, over
 * how long, and the longest stretch in which none did.
 */
async function phase(
  ready: () => Promise<boolean>,
): Promise<{ calls: number; ms: number; longestPauseMs: number; busiestSecondSoFar: number }> {
  const startedAt = performance.now();
  const before = arrived();
  let last = { count: before, at: startedAt };
  let longestPauseMs = 0;
  await until(async () => {
    const now = performance.now();
    if (arrived() !== last.count) last = { count: arrived(), at: now };
    longestPauseMs = Math.max(longestPauseMs, now - last.at);
    return now - startedAt >= PHASE_MS && (await ready());
  }, 'the phase to end');
  return {
    calls: arrived() - before,
    ms: performance.now() - startedAt,
    longestPauseMs,
    busiestSecondSoFar: platform.counters.apiCalls.maxPerSecond[integration.machineId] ?? 0,
  };
}

function allIn(mode: 'shared' | 'fallback'): () => Promise<boolean> {
  return async () => (await Promise.all(replicas.map((r) => r.ask<string>('mode')))).every((m) => m === mode);
}

async function outage(requestsPerSecond: number, restart: 'killed, restarted empty' | 'frozen, thawed with its data') {
  // No limit on the emulator's side: its busiest second is then what the fleet sent, not what it let through. An
  // integration of its own: the emulator counts a second per integration, and resetting its counters does not empty
  // that second, so the last requests of an earlier test would count beside this one's first burst.
  integration = await platform.createIntegration({ name: `rate limit outage at ${requestsPerSecond}/s` });
  const options: PlatformAuthOptions = {
    ...integration.moduleOptions,
    tokenStore: {
      url: redis().url,
      encryptionKey: randomBytes(32).toString('base64'),
      keyPrefix: `outage-${randomBytes(4).toString('hex')}:`,
    },
    // The default burst: under demand that never lets up, turns go one per interval after the first burst, so a
    // request that reaches the platform late adds at most one to a second, even on a machine with both cores busy.
    rateLimit: { requestsPerSecond },
  };
  await Promise.all(replicas.map((r) => r.ask('start', { options })));
  platform.resetCounters();
  await Promise.all(replicas.map((r) => r.ask('run', { inFlight: IN_FLIGHT, path: `${options.baseUrl}/api/billing` })));
  try {
    const shared = await phase(allIn('shared'));
    if (restart === 'killed, restarted empty') await redis().kill();
    else redis().pause();
    let down;
    try {
      down = await phase(allIn('fallback'));
    } finally {
      if (restart === 'killed, restarted empty') await redis().launch();
      else redis().resume();
    }
    const back = await phase(allIn('shared'));
    const counts = await Promise.all(replicas.map((r) => r.ask<Counts>('stop')));
    expect(counts.flatMap((c) => c.errors)).toEqual([]);
    const phases = { shared, down, back };
    expect(
      platform.counters.apiCalls.maxPerSecond[integration.machineId],
      `the busiest second, phase by phase: ${JSON.stringify(phases)}`,
    ).toBeLessThanOrEqual(requestsPerSecond);
    // Calls keep flowing: each phase of a few seconds carries at least a second's worth, and no pause is longer than
    // the switch's (about two windows) with room for a busy machine, far below rateLimit.maxWaitMs (10 s).
    for (const { calls, longestPauseMs } of Object.values(phases)) {
      expect(calls).toBeGreaterThanOrEqual(requestsPerSecond);
      expect(longestPauseMs).toBeLessThan(5_000);
    }
  } finally {
    await Promise.all(replicas.map((r) => r.ask('stop').catch(() => undefined)));
    await Promise.all(replicas.map((r) => r.ask('close')));
  }
}

describe('a limit the fleet shares through Redis, while Redis goes away and comes back', () => {
  it('never lets the platform see more than 10 requests in any second when Redis is killed and restarted empty', async () => {
    await outage(10, 'killed, restarted empty');
  });

  it('never lets the platform see more than 20 requests in any second when Redis freezes and thaws with its data', async () => {
    await outage(20, 'frozen, thawed with its data');
  });
});
