import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { startRedis } from '../support/redis.js';
import { progress, type Report } from '../support/report.js';

const CHILD = fileURLToPath(new URL('../support/rate-limit-replica.child.js', import.meta.url));

interface ReplicaCounts {
  sent: number;
  ok: number;
  throttled: number;
  otherStatus: number;
  failed: number;
}

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`a replica process exited (${code})`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as T);
    });
  });
}

/**
 * Scenario 11. A rate limit the fleet shares: `replicas` processes, each with its own module and `inFlight` loops
 * calling the emulator's API as fast as their turns allow, share `requestsPerSecond` through one redis-server. The
 * emulator (on the real clock, with no limit of its own) counts the most requests it received from the integration
 * in any one second, by their arrival.
 */
export async function measureRateLimit(
  report: Report,
  sizes: { replicas: number; requestsPerSecond: number; durationMs: number; inFlight: number; bursts: number[] },
): Promise<void> {
  for (const burst of sizes.bursts) await measureFleet(report, { ...sizes, burst });
}

async function measureFleet(
  report: Report,
  sizes: { replicas: number; requestsPerSecond: number; durationMs: number; inFlight: number; burst: number },
): Promise<void> {
  const { replicas, requestsPerSecond, durationMs, inFlight, burst } = sizes;
  const fleet = `${replicas} processes sharing ${requestsPerSecond} requests/s, burst ${burst}`;
  const id = `rateLimit.burst${burst}`;
  const redis = await startRedis();
  const emulator = await PlatformEmulator.start();
  const children: ChildProcess[] = [];
  try {
    // No limit on the emulator's side: its busiest second is then what the fleet really sent, not what it let through.
    const integration = await emulator.createIntegration({ name: 'bench rate limit' });
    const options: PlatformAuthOptions = {
      ...integration.moduleOptions,
      tokenStore: {
        url: redis.url,
        encryptionKey: randomBytes(32).toString('base64'),
        keyPrefix: `bench-${randomBytes(4).toString('hex')}:`,
      },
    };
    progress(`${fleet}, for ${durationMs / 1000} s`);
    for (let i = 0; i < replicas; i++) {
      const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      child.send({ options, rateLimit: { requestsPerSecond, burst } });
    }
    await Promise.all(children.map((child) => nextMessage(child)));
    emulator.resetCounters();
    const startedAt = performance.now();
    const results = children.map((child) => nextMessage<ReplicaCounts>(child));
    for (const child of children) child.send({ command: 'run', durationMs, inFlight });
    const counts = await Promise.all(results);
    const seconds = (performance.now() - startedAt) / 1000;
    const total = (key: keyof ReplicaCounts) => counts.reduce((sum, c) => sum + c[key], 0);
    const api = emulator.counters.apiCalls;
    const busiest = api.maxPerSecond[integration.machineId] ?? 0;
    report.noMoreThan(
      `${id}.maxPerSecond`,
      `${fleet}: most requests the platform received in any one second`,
      busiest,
      requestsPerSecond,
      'emulator counter',
    );
    report.exactly(`${id}.failed`, `${fleet}: calls that failed`, total('failed'), 0, 'replicas');
    report.info(
      `${id}.throughput`,
      `${fleet}: requests sent per second, all replicas`,
      total('sent') / seconds,
      `${(total('sent') / seconds).toFixed(1)} (${total('sent')} in ${seconds.toFixed(1)} s)`,
      `the limit, ${requestsPerSecond}`,
    );
    report.detail(id, { counts, seconds, api: { total: api.total, ok: api.ok } });
  } finally {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    }
    await emulator.close();
    await redis.stop();
  }
}
