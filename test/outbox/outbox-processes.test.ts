import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformOutbox, PlatformOutboxModule, type OutboxMessage } from 'nestjs-platform-auth/outbox';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { useRedisServer } from '../support/redis-server.js';
import { OutboxReplica, type ReplicaEvent, type ReplicaSettings } from './outbox-fleet.js';

// Every write reaches the disk before Redis answers: a job BullMQ acknowledged survives the restart below.
const redis = useRedisServer(['--appendonly', 'yes', '--appendfsync', 'always']);

let platform: PlatformEmulator;
let proxy: HoldingProxy;
let enqueuer: TestingModule;
const replicas: OutboxReplica[] = [];
const events: ReplicaEvent[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  proxy = await startHoldingProxy(platform.url);
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.kill()));
  await enqueuer?.close();
  await proxy?.close();
  await platform?.close();
});

const message = (n: number): OutboxMessage => ({ method: 'POST', path: '/api/messages', body: { n } });
const sentIds = () => new Set(events.filter((e) => e.event === 'sent').map((e) => e.payload.id));

describe('the outbox across processes', () => {
  it('delivers every message exactly once through a worker killed mid-send and a Redis restart', async () => {
    const integration = await platform.createIntegration();
    const queueName = `outbox-processes-${process.pid}`;
    const settings: ReplicaSettings = {
      // Through the proxy, so a send can be held in flight; the audience stays the platform's.
      integration: { ...integration.moduleOptions, baseUrl: proxy.url, audience: new URL(platform.url).host },
      outbox: {
        connection: { url: redis().url },
        queueName,
        // A worker that dies gives its job back within max(lockDurationMs, 2 × stalledIntervalMs) + stalledIntervalMs,
        // 1.5 s here; with the default stall checks (every 30 s) the test waited out most of a minute for it.
        worker: { concurrency: 2, lockDuration: 1_000, stalledInterval: 500 },
        retry: { attempts: 100, delayMs: 20, maxDelayMs: 500 },
        sendTimeoutMs: 5_000,
      },
    };
    const start = async (index: number) => {
      const replica = await OutboxReplica.start(index, settings, (event) => events.push(event));
      replicas.push(replica);
      return replica;
    };
    enqueuer = await Test.createTestingModule({
      imports: [PlatformOutboxModule.forRoot({ connection: { url: redis().url }, queueName, worker: false })],
    }).compile();
    await enqueuer.init();
    const outbox = enqueuer.get(PlatformOutbox);
    const ids: string[] = [];

    // The only worker sends the first message; the platform has processed it, and the worker dies before the answer
    // reaches it: the message is sent, but the queue does not know it.
    const doomed = await start(0);
    const held = proxy.holdNextAnswer();
    ids.push(await outbox.enqueue(message(0)));
    await held.arrived;
    expect(platform.counters.idempotency.keys).toBe(1);
    await doomed.kill();
    held.release();
    await start(1);
    await start(2);
    await eventually(() => expect(sentIds()).toContain(ids[0]));

    // Redis dies with messages waiting, in back-off and in flight, and comes back with what it had acknowledged.
    for (let n = 1; n <= 30; n += 1) ids.push(await outbox.enqueue(message(n)));
    await eventually(() => expect(sentIds().size).toBeGreaterThanOrEqual(5));
    await redis().kill();
    await redis().launch();
    for (let n = 31; n <= 40; n += 1) ids.push(await outbox.enqueue(message(n)));

    await eventually(async () => expect(await outbox.status()).toMatchObject({ depth: 0, sent: ids.length }));
    expect(await outbox.status()).toMatchObject({ failed: 0, deadLettered: 0 });
    // Every `sent` event names an enqueued message. An event may be missing: a completion Redis recorded just before
    // it was killed, whose reply the worker never got, is sent but was never reported (events are not durable; the
    // queue's state and the platform's journal below are what prove delivery).
    expect([...sentIds()].filter((id) => !ids.includes(id))).toEqual([]);
    expect(sentIds().size).toBeGreaterThan(ids.length / 2);
    // The platform processed each key once: as many keys as messages, any second send answered from the journal.
    const { keys, duplicates, mismatches } = platform.counters.idempotency;
    expect({ keys, mismatches }).toEqual({ keys: ids.length, mismatches: 0 });
    // The first message at least was sent twice, and answered from the journal the second time.
    expect(duplicates).toBeGreaterThanOrEqual(1);
    expect(platform.counters.apiCalls.ok).toBe(ids.length + duplicates);
    console.log(`outbox across processes: ${ids.length} messages, ${duplicates} duplicates answered by the journal`);
  });
});
