import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  PlatformOutbox,
  PlatformOutboxError,
  PlatformOutboxModule,
  type OutboxConnection,
  type OutboxMessage,
} from 'nestjs-platform-auth/outbox';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { OutboxReplica, type ReplicaEvent, type ReplicaSettings } from './outbox-fleet.js';

/** What a delivery run counted: the messages, and the second sends the platform answered from its journal. */
export interface Delivered {
  readonly messages: number;
  readonly duplicates: number;
}

/**
 * The delivery scenario every Redis topology runs: worker processes of the built package send messages an enqueuing
 * application stores, through a worker killed mid-send after the platform took its message, then through `disrupt`
 * (a Redis restart, a Cluster node restarted, a Sentinel failover) with messages waiting, in back-off and in flight.
 * Every message is sent, and the platform processes each key once: none lost, none doubled.
 */
export function useDeliveryScenario(): (
  connection: OutboxConnection,
  disrupt: () => Promise<void>,
) => Promise<Delivered> {
  let platform: PlatformEmulator;
  let proxy: HoldingProxy;
  const closing: (() => Promise<void>)[] = [];
  let runs = 0;
  beforeAll(async () => {
    platform = await PlatformEmulator.start();
    proxy = await startHoldingProxy(platform.url);
  });
  afterAll(async () => {
    for (const close of closing.splice(0).reverse()) await close();
    await proxy?.close();
    await platform?.close();
  });

  return async (connection, disrupt) => {
    const integration = await platform.createIntegration();
    const queueName = `outbox-delivery-${process.pid}-${(runs += 1)}`;
    const events: ReplicaEvent[] = [];
    const settings: ReplicaSettings = {
      // Through the proxy, so a send can be held in flight; the audience stays the platform's.
      integration: { ...integration.moduleOptions, baseUrl: proxy.url, audience: new URL(platform.url).host },
      outbox: {
        connection,
        queueName,
        // A worker that dies gives its job back within max(lockDuration, 2 × stalledInterval) + stalledInterval.
        worker: { concurrency: 2, lockDuration: 1_000, stalledInterval: 500 },
        retry: { attempts: 100, delayMs: 20, maxDelayMs: 500 },
        sendTimeoutMs: 5_000,
      },
    };
    const replicas: OutboxReplica[] = [];
    closing.push(() => Promise.all(replicas.map((replica) => replica.kill())).then(() => undefined));
    const start = async () => {
      const replica = await OutboxReplica.start(replicas.length, settings, (event) => events.push(event));
      replicas.push(replica);
      return replica;
    };
    const enqueuer = await Test.createTestingModule({
      imports: [PlatformOutboxModule.forRoot({ connection, queueName, worker: false, enqueueTimeoutMs: 2_000 })],
    }).compile();
    await enqueuer.init();
    closing.push(() => enqueuer.close());
    const outbox = enqueuer.get(PlatformOutbox);
    const ids: string[] = [];
    const sentIds = () => new Set(events.filter((e) => e.event === 'sent').map((e) => e.payload.id));
    /** As the docs say: an enqueue that rejected is made again under the same key. */
    const enqueue = async (n: number): Promise<void> => {
      const message: OutboxMessage = { method: 'POST', path: '/api/messages', body: { n }, idempotencyKey: `m-${n}` };
      for (;;) {
        const id = await outbox.enqueue(message).catch((error: unknown) => {
          expect(error).toBeInstanceOf(PlatformOutboxError);
          return undefined;
        });
        if (id !== undefined) return void ids.push(id);
      }
    };
    const keysBefore = platform.counters.idempotency.keys;
    const duplicatesBefore = platform.counters.idempotency.duplicates;

    // The only worker sends the first message; the platform has processed it, and the worker dies before the answer
    // reaches it: the message is sent, but the queue does not know it.
    const doomed = await start();
    const held = proxy.holdNextAnswer();
    await enqueue(0);
    await held.arrived;
    await doomed.kill();
    held.release();
    await start();
    await start();
    await eventually(() => expect(sentIds()).toContain(ids[0]));

    // Redis is disrupted with messages waiting, in back-off and in flight.
    for (let n = 1; n <= 30; n += 1) await enqueue(n);
    await eventually(() => expect(sentIds().size).toBeGreaterThanOrEqual(5));
    await disrupt();
    for (let n = 31; n <= 40; n += 1) await enqueue(n);

    await eventually(async () => expect(await outbox.status()).toMatchObject({ depth: 0, sent: ids.length }));
    expect(await outbox.status()).toMatchObject({ failed: 0, deadLettered: 0 });
    // Every `sent` event names an enqueued message (events are reports, not records: one may be missing).
    expect([...sentIds()].filter((id) => !ids.includes(id))).toEqual([]);
    // The platform processed each key once: as many keys as messages, any second send answered from the journal.
    const { keys, duplicates, mismatches } = platform.counters.idempotency;
    expect({ keys: keys - keysBefore, mismatches }).toEqual({ keys: ids.length, mismatches: 0 });
    // The first message at least was sent twice, and answered from the journal the second time.
    expect(duplicates - duplicatesBefore).toBeGreaterThanOrEqual(1);
    await Promise.all(replicas.map((replica) => replica.stop()));
    return { messages: ids.length, duplicates: duplicates - duplicatesBefore };
  };
}
