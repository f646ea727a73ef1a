import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { headroomMs, rateLimitShape } from '../../lib/calls/rate-limit/rate-limit.schedule.js';
import { ChildReplica } from '../support/child-replica.js';
import { until, useRedisServer } from '../support/redis-server.js';

/**
 * A fleet of replica processes sharing one limit through a real redis-server, calling the emulator as fast as their
 * turns allow, while Redis goes away and comes back. Two clocks are read, the machine's own in every process:
 * - each replica notes when the gate let each request go (its turn);
 * - the platform notes when each request arrived.
 * Every request the platform saw took a turn; no window of the limit's (1.1 s) less the gate's tolerance holds more
 * turns than the limit; and no second at the platform holds more than the limit among the requests that arrived
 * within the rest of the headroom after their turns. A request that took longer to arrive (a process starved of CPU,
 * a slow connection) is outside what the headroom covers, so the test counts it and says so instead of failing: the
 * platform's own busiest second is in the message. Calls keep flowing in every phase.
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
  /** Request id and the epoch ms at which the gate let it go. */
  turns: [string, number][];
}

/** A request to the API as the platform saw it arrive: its `x-request` id, epoch ms. */
interface Arrival {
  readonly id: string;
  readonly at: number;
}

/** The most of `times` (epoch ms) in any window of `windowMs`. */
function busiest(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < sorted.length; last += 1) {
    while (sorted[last] - sorted[first] >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
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
const arrivals: Arrival[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  // Stamped as the emulator starts on a request, before its own count: the same moment it counts a second from.
  const answer = platform.traffic.answer.bind(platform.traffic);
  platform.traffic.answer = (request, delayFault) => {
    const id = request.headers['x-request'];
    if (typeof id === 'string') arrivals.push({ id, at: Date.now() });
    return answer(request, delayFault);
  };
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
  arrivals.length = 0;
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
    const turnAt = new Map(counts.flatMap((c) => c.turns));
    const shape = rateLimitShape(requestsPerSecond);
    // How late the gate lets a turn go at most; the rest of the headroom is the way to the platform.
    const toleranceMs = headroomMs(shape) / 2;
    const late = arrivals.filter((a) => a.at - turnAt.get(a.id)! > toleranceMs);
    const delays = arrivals.map((a) => a.at - turnAt.get(a.id)!).sort((a, b) => a - b);
    const seen = {
      phases,
      platformBusiestSecond: platform.counters.apiCalls.maxPerSecond[integration.machineId],
      arrivals: arrivals.length,
      arrivedLaterThanToleranceMs: late.length,
      slowestArrivalMs: delays.at(-1),
    };
    const said = `what the run saw: ${JSON.stringify(seen)}`;
    expect(arrivals.length, said).toBeGreaterThan(0);
    expect(
      arrivals.filter((a) => !turnAt.has(a.id)).map((a) => a.id),
      said,
    ).toEqual([]);
    expect(busiest([...turnAt.values()], shape.windowMs - toleranceMs), said).toBeLessThanOrEqual(requestsPerSecond);
    const onTime = arrivals.filter((a) => !late.includes(a));
    expect(
      busiest(
        onTime.map((a) => a.at),
        1_000,
      ),
      said,
    ).toBeLessThanOrEqual(requestsPerSecond);
    if (late.length === 0) expect(seen.platformBusiestSecond, said).toBeLessThanOrEqual(requestsPerSecond);
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
