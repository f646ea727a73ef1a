import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import { createClient } from 'redis';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformOutbox, PlatformOutboxModule } from 'nestjs-platform-auth/outbox';
import type { EmulatorCounters } from 'nestjs-platform-auth/testing';
import { BenchChild } from '../support/child.js';
import { startRedis } from '../support/redis.js';
import { progress, type Report } from '../support/report.js';
import { collectBetweenBlocks, median, spread } from '../support/stats.js';

/** The outbox's throughput against bare BullMQ's, on the same Redis and the same platform. */
const TARGET = 0.9;
/** The outbox's default `worker.concurrency`, which the bare worker copies. */
const CONCURRENCY = 4;

export interface OutboxSizes {
  /** A/B pairs: one bare run and one outbox run each, the order swapped every pair. */
  readonly rounds: number;
  /** Messages per run. */
  readonly messages: number;
  /** Enqueues in flight while a run fills the queue. */
  readonly producers: number;
}

interface Run {
  readonly seconds: number;
  /** This process's CPU (user + system) per message, µs: the producer, the worker and the HTTP client. */
  readonly cpuUs: number;
  /** What the platform counted for the run: requests answered 2xx, and distinct idempotency keys. */
  readonly answered: number;
  readonly keys: number;
}

/** One way to send `messages` to the platform: it enqueues one, and resolves once that many were answered. */
interface Sender {
  readonly name: string;
  enqueue(key: string, body: object): Promise<unknown>;
  /** Resolves when `count` messages more than now have been answered 2xx. */
  delivered(count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Scenario 14. Messages per second from the first enqueue until the platform answered them all, through the outbox
 * (`enqueue`, its worker at the default concurrency) and through a bare BullMQ `Queue` and `Worker` at the same
 * concurrency that post each job's body with `fetch` and a hard-coded `Authorization` header: one redis-server, one
 * emulator in a process of its own, runs alternated A/B/B/A. The platform's counters check every run: all N answered
 * 2xx under N distinct keys, none lost.
 */
export async function measureOutbox(report: Report, sizes: OutboxSizes): Promise<void> {
  const redis = await startRedis();
  const { child: platform, hello } = await BenchChild.start<{ url: string }>('./emulator.child.js');
  let app: INestApplicationContext | undefined;
  const senders: Sender[] = [];
  try {
    const integration = await platform.request<PlatformAuthOptions>({ command: 'create', name: 'bench outbox' });
    app = await NestFactory.createApplicationContext(
      {
        module: class OutboxBench {},
        imports: [
          PlatformAuthModule.forRoot({ ...integration, startupCheck: 'off' }),
          PlatformOutboxModule.forRoot({ connection: { url: redis.url }, queueName: 'bench-outbox' }),
        ],
      },
      { logger: ['error'] },
    );
    const authorization = `Bearer ${await app.get(TokenProvider).getAccessToken()}`;
    senders.push(await bareBullMq(redis.url, `${hello.url}/api/messages`, authorization));
    senders.push(outboxSender(app.get(PlatformOutbox)));
    const counters = () => platform.request<EmulatorCounters>({ command: 'counters' });

    const runOnce = async (sender: Sender, label: string, messages: number): Promise<Run> => {
      collectBetweenBlocks();
      const before = await counters();
      const done = sender.delivered(messages);
      const cpu = process.cpuUsage();
      const startedAt = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: sizes.producers }, async () => {
          while (next < messages) {
            const i = (next += 1);
            await sender.enqueue(`${label}-${i}`, { to: `user-${i % 100}`, text: `message ${i} of ${label}` });
          }
        }),
      );
      await done;
      const seconds = (performance.now() - startedAt) / 1000;
      const used = process.cpuUsage(cpu);
      const after = await counters();
      return {
        seconds,
        cpuUs: (used.user + used.system) / messages,
        answered: after.apiCalls.ok - before.apiCalls.ok,
        keys: after.idempotency.keys - before.idempotency.keys,
      };
    };

    progress(`warm-up: ${sizes.messages / 4} messages through each`);
    for (const sender of senders) await runOnce(sender, `warm-${sender.name}`, sizes.messages / 4);
    const runs = new Map<string, Run[]>(senders.map((sender) => [sender.name, []]));
    for (let round = 0; round < sizes.rounds; round += 1) {
      const order = round % 2 === 0 ? senders : [...senders].reverse();
      for (const sender of order)
        runs.get(sender.name)!.push(await runOnce(sender, `${sender.name}-${round}`, sizes.messages));
      const [bare, outbox] = senders.map((sender) => runs.get(sender.name)!.at(-1)!);
      progress(
        `round ${round + 1}/${sizes.rounds}: bare ${(sizes.messages / bare.seconds).toFixed(0)}/s, outbox ${(sizes.messages / outbox.seconds).toFixed(0)}/s`,
      );
    }

    const bare = runs.get('bare')!;
    const outbox = runs.get('outbox')!;
    const ratios = outbox.map((run, i) => bare[i].seconds / run.seconds);
    const rate = (list: Run[]) => median(list.map((run) => sizes.messages / run.seconds));
    const addedWallUs = outbox.map((run, i) => ((run.seconds - bare[i].seconds) / sizes.messages) * 1e6);
    const addedCpuUs = outbox.map((run, i) => run.cpuUs - bare[i].cpuUs);
    const runsLabel = `${sizes.rounds} A/B rounds of ${sizes.messages} messages, concurrency ${CONCURRENCY}`;
    report.atLeast(
      'outbox.throughput',
      `outbox: messages per second against bare BullMQ (${runsLabel})`,
      median(ratios),
      TARGET,
      { baseline: 'bare BullMQ Queue + Worker, fetch with the header', spread: { ...spread(ratios), kind: 'range' } },
    );
    report.info(
      'outbox.addedCpu',
      'outbox: CPU it adds per message in this process (enqueue to answer)',
      median(addedCpuUs),
      `${median(addedCpuUs).toFixed(0)} µs (bare ${median(bare.map((r) => r.cpuUs)).toFixed(0)} µs)`,
      'bare BullMQ, same run',
      { ...spread(addedCpuUs), kind: 'range' },
    );
    report.info(
      'outbox.addedWall',
      'outbox: time it adds per message at the queue (1/rate − 1/bare rate)',
      median(addedWallUs),
      `${median(addedWallUs).toFixed(0)} µs (${rate(outbox).toFixed(0)}/s against ${rate(bare).toFixed(0)}/s)`,
      'bare BullMQ, same run',
      { ...spread(addedWallUs), kind: 'range' },
    );
    const all = [...bare, ...outbox];
    report.exactly(
      'outbox.answered',
      'outbox and bare BullMQ: messages the platform answered 2xx, every run',
      all.reduce((sum, run) => sum + run.answered, 0),
      all.length * sizes.messages,
      'emulator counter',
    );
    report.exactly(
      'outbox.keys',
      'outbox and bare BullMQ: distinct idempotency keys the platform processed, every run',
      all.reduce((sum, run) => sum + run.keys, 0),
      all.length * sizes.messages,
      'emulator counter',
    );
    report.detail('outbox', { sizes, concurrency: CONCURRENCY, bare, outbox });
  } finally {
    for (const sender of senders) await sender.close();
    await app?.close();
    await platform.close();
    await redis.stop();
  }
}

/** Completions counted by events; `delivered(n)` waits for n more. */
class Completions {
  private count = 0;
  private waiting?: { until: number; resolve: () => void };

  add(): void {
    this.count += 1;
    if (this.waiting && this.count >= this.waiting.until) {
      this.waiting.resolve();
      this.waiting = undefined;
    }
  }

  after(more: number): Promise<void> {
    return new Promise((resolve) => (this.waiting = { until: this.count + more, resolve }));
  }
}

/** The outbox as an application uses it: `enqueue`, its own worker, the `sent` event. */
function outboxSender(outbox: PlatformOutbox): Sender {
  const completions = new Completions();
  outbox.on('sent', () => completions.add());
  outbox.on('failed', ({ reason }) => console.error(`outbox: a message failed: ${reason}`));
  return {
    name: 'outbox',
    enqueue: (key, body) => outbox.enqueue({ method: 'POST', path: '/api/messages', body, idempotencyKey: key }),
    delivered: (count) => completions.after(count),
    close: async () => undefined,
  };
}

/**
 * BullMQ as a user without the library would write it: the key as the job's id, the body posted with `fetch` and
 * the token pasted in, on a node-redis client as the outbox gives BullMQ.
 */
async function bareBullMq(redisUrl: string, url: string, authorization: string): Promise<Sender> {
  const client = createClient({ url: redisUrl });
  await client.connect();
  const connection = client as unknown as ConnectionOptions;
  const queue = new Queue('bench-bare', { connection });
  const completions = new Completions();
  const worker = new Worker(
    'bench-bare',
    async (job) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', 'idempotency-key': String(job.id) },
        body: JSON.stringify(job.data),
      });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return response.status;
    },
    { connection, concurrency: CONCURRENCY },
  );
  worker.on('completed', () => completions.add());
  worker.on('failed', (_job, error) => console.error(`bare BullMQ: a job failed: ${error.message}`));
  return {
    name: 'bare',
    enqueue: (key, body) => queue.add('message', body, { jobId: key }),
    delivered: (count) => completions.after(count),
    close: async () => {
      await worker.close();
      await queue.close();
      client.destroy();
    },
  };
}
