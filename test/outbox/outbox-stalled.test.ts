import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformOutboxOptions } from 'nestjs-platform-auth/outbox';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { useRedisServer } from '../support/redis-server.js';
import { OutboxReplica } from './outbox-fleet.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

let platform: PlatformEmulator;
let proxy: HoldingProxy;
const replicas: OutboxReplica[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  proxy = await startHoldingProxy(platform.url);
});

afterEach(async () => {
  await Promise.all(replicas.splice(0).map((replica) => replica.kill()));
});

afterAll(async () => {
  await proxy?.close();
  await platform?.close();
});

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;
const RETRY = { attempts: 3, delayMs: 20, maxDelayMs: 100 } as const;

/**
 * A worker process whose send of a new message is held at the proxy, on its way to the platform, and the message's
 * id: the process is then killed mid-send.
 */
async function workerMidSend(queueName: string, worker: PlatformOutboxOptions['worker']) {
  const integration = await platform.createIntegration();
  const replica = await OutboxReplica.start(
    replicas.length,
    {
      // Through the proxy, so the send can be held in flight; the audience stays the platform's.
      integration: { ...integration.moduleOptions, baseUrl: proxy.url, audience: new URL(platform.url).host },
      outbox: { connection: { url: redis().url }, queueName, worker, retry: RETRY },
    },
    () => undefined,
  );
  replicas.push(replica);
  const held = proxy.holdNext();
  const [id] = await replica.enqueue([MESSAGE]);
  await held.arrived;
  return { replica, id: id as string };
}

describe('PlatformOutbox: a worker killed mid-send (SIGKILL) gives its job back', () => {
  it('to another worker after its lock runs out, within max(lockDuration, 2 × stalledInterval) + stalledInterval', async () => {
    const lockDurationMs = 4_000;
    const stalledIntervalMs = 250;
    const queueName = `outbox-stalled-${process.pid}-1`;
    const worker = { lockDuration: lockDurationMs, stalledInterval: stalledIntervalMs };
    const { replica, id } = await workerMidSend(queueName, worker);
    // Another worker, in this process, waits for work.
    const survivor = await start(redis().url, { platform, queueName, worker, retry: RETRY });

    const killedAt = Date.now();
    await replica.kill();
    const lockLeftMs = Number(await redis().command('PTTL', `bull:{${queueName}}:${queueName}:${id}:lock`));
    // The queue is looked at every stalledInterval: the mark of the last look lasts no longer.
    const sinceLastLookMs = Number(await redis().command('PTTL', `bull:{${queueName}}:${queueName}:stalled-check`));
    await eventually(() => expect(survivor.events.map((e) => e.event)).toContain('sent'));
    const pickedUpAt = Number(await redis().command('HGET', `bull:{${queueName}}:${queueName}:${id}`, 'processedOn'));

    const recoveryMs = pickedUpAt - killedAt;
    const documentedMs = Math.max(lockDurationMs, 2 * stalledIntervalMs) + stalledIntervalMs;
    console.log(
      `stalled job: lock ${lockDurationMs} ms (${lockLeftMs} ms left at the kill), stall checks every ` +
        `${stalledIntervalMs} ms: picked up ${recoveryMs} ms after the kill; documented bound ${documentedMs} ms`,
    );
    expect(lockLeftMs).toBeGreaterThan(0);
    expect(sinceLastLookMs).toBeLessThanOrEqual(stalledIntervalMs);
    // Not before the lock ran out: no two workers ever hold the job at once.
    expect(recoveryMs).toBeGreaterThanOrEqual(lockLeftMs);
    // The bound, and a second for the timers of the stall checks and the lock renewal, which a busy machine runs late.
    expect(recoveryMs).toBeLessThanOrEqual(documentedMs + 1_000);
    expect(survivor.events.find((e) => e.event === 'sent')?.payload).toMatchObject({ id });
  });

  it('as a dead letter naming the stalls once it came back more than maxStalledCount times, never sent again', async () => {
    const queueName = `outbox-stalled-${process.pid}-2`;
    const worker = { lockDuration: 1_000, stalledInterval: 250, maxStalledCount: 0 };
    const { replica, id } = await workerMidSend(queueName, worker);
    const survivor = await start(redis().url, { platform, queueName, worker, retry: RETRY });
    const before = platform.counters.apiCalls.total;

    await replica.kill();
    await eventually(() => expect(survivor.events.map((e) => e.event)).toEqual(['dead-lettered']));
    const reason = expect.stringMatching(
      /^stalled: its worker stopped mid-send more often than maxStalledCount allows/,
    );
    expect(survivor.events[0]?.payload).toEqual({ id, reason });
    expect(await survivor.outbox.deadLetters()).toEqual([expect.objectContaining({ id, reason })]);
    expect(platform.counters.apiCalls.total).toBe(before);
  });
});
