import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import { createClient } from 'redis';
import { PlatformAuthModule, PlatformFetch, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';

import { PlatformOutbox, PlatformOutboxModule } from 'nestjs-platform-auth/outbox';
import type { EmulatorCounters } from 'nestjs-platform-auth/testing';
import { BenchChild } from '../support/child.js';
import { processCpuUs } from '../support/process-cpu.js';
import { startRedis } from '../support/redis.js';
import { progress, type Report } from '../support/report.js';
import { collectBetweenBlocks, median, spread } from '../support/stats.js';

type PlatformFetchInit = NonNullable<Parameters<PlatformFetch['fetch']>[1]>;

/** The outbox's throughput against bare BullMQ's, on the same Redis and the same platform. */
const TARGET = 0.9;
/** The outbox's default `worker.concurrency`, which the bare worker copies. */
const CONCURRENCY = 4;
/** Tenants the messages of the second comparison are spread over, each sent with its own token. */
const TENANTS = 1_000;

export interface OutboxSizes {
  /** A/B pairs of bare BullMQ and the outbox, the order swapped every pair. */
  readonly rounds: number;
  /** Rounds of the ladder (bare BullMQ, then the outbox's parts added one at a time), the order rotated. */
  readonly ladderRounds: number;
  /** Messages per run. */
  readonly messages: number;
  /** Enqueues in flight while a run fills the queue. */
  readonly producers: number;
}

interface Run {
  readonly messages: number;
  readonly seconds: number;
  /** This process's CPU (user + system) per message, µs: the producer, the worker and the HTTP client. */
  readonly cpuUs: number;
  /** The CPU per message of redis-server and of the platform's process, µs (0 where /proc cannot be read). */
  readonly otherCpuUs: number;
  /** What the platform counted for the run: requests answered 2xx, and distinct idempotency keys. */
  readonly answered: number;
  readonly keys: number;
  /** Redis commands per message (`INFO commandstats`), those scripts ran included. */
  readonly redisCommands: number;
  /** Of those, the script calls (BullMQ's `EVALSHA`): a command on the wire each. */
  readonly scriptCalls: number;
}

/** One way to send messages to the platform: it enqueues one, and tells when a number of them were answered. */
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
 * emulator in a process of its own, runs alternated A/B, B/A. Then a ladder from bare BullMQ to the outbox, one part
 * added per step, for what each part costs. The platform's counters check every run: all N answered 2xx under N
 * distinct keys, none lost; Redis's own counts give the commands each message took.
 */
export async function measureOutbox(report: Report, sizes: OutboxSizes): Promise<void> {
  const redis = await startRedis();
  const { child: platform, hello } = await BenchChild.start<{ url: string }>('./emulator.child.js');
  let app: INestApplicationContext | undefined;
  const senders: Sender[] = [];
  const stats = createClient({ url: redis.url });
  try {
    const integration = await platform.request<PlatformAuthOptions>({ command: 'create', name: 'bench outbox' });
    app = await NestFactory.createApplicationContext(
      {
        module: class OutboxBench {},
        imports: [
          PlatformAuthModule.forRoot({ ...integration, startupCheck: 'off' }),
          // The tenants share the integration's credentials; each is an integration of its own, with its own token.
          PlatformAuthModule.forTenants({ resolve: async () => ({ ...integration, startupCheck: 'off' }) }),
          PlatformOutboxModule.forRoot({ connection: { url: redis.url }, queueName: 'bench-outbox' }),
        ],
      },
      { logger: ['error'] },
    );
    const authorization = `Bearer ${await app.get(TokenProvider).getAccessToken()}`;
    const bare = (options: BareOptions) => bareBullMq(redis.url, `${hello.url}/api/messages`, authorization, options);
    const outbox = outboxSender(app.get(PlatformOutbox));
    const outboxTenants = outboxSender(app.get(PlatformOutbox), TENANTS);
    const ladder = [
      await bare({ name: 'bare' }),
      await bare({ name: '+ job options', jobOptions: true }),
      await bare({ name: '+ read back', jobOptions: true, readBack: true }),
      await bare({ name: '+ PlatformFetch', jobOptions: true, readBack: true, platformFetch: app.get(PlatformFetch) }),
      outbox,
    ];
    senders.push(...ladder, outboxTenants);
    const counters = () => platform.request<EmulatorCounters>({ command: 'counters' });
    await stats.connect();
    const commandStats = async () => redisCommandStats(String(await stats.info('commandstats')));
    const all: Run[] = [];

    let runs = 0;
    const runOnce = async (sender: Sender, messages: number): Promise<Run> => {
      const label = `${sender.name}-${(runs += 1)}`;
      collectBetweenBlocks();
      const before = await counters();
      const commandsBefore = await commandStats();
      const done = sender.delivered(messages);
      const others = () => (processCpuUs(redis.pid) ?? 0) + (processCpuUs(platform.pid) ?? 0);
      const othersBefore = others();
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
      const othersUsed = others() - othersBefore;
      const after = await counters();
      const commandsAfter = await commandStats();
      const run = {
        messages,
        seconds,
        cpuUs: (used.user + used.system) / messages,
        otherCpuUs: othersUsed / messages,
        answered: after.apiCalls.ok - before.apiCalls.ok,
        keys: after.idempotency.keys - before.idempotency.keys,
        // The two INFO calls themselves are counted too: two in a run of hundreds of messages.
        redisCommands: (commandsAfter.all - commandsBefore.all) / messages,
        scriptCalls: (commandsAfter.scripts - commandsBefore.scripts) / messages,
      };
      all.push(run);
      return run;
    };
    const rate = (run: Run) => sizes.messages / run.seconds;

    progress(`warm-up: ${sizes.messages / 2} messages through each of ${ladder.length} ways`);
    for (const sender of ladder) await runOnce(sender, sizes.messages / 2);
    // Every tenant built and holding its token before any measured run: two messages each.
    progress(`warm-up: ${2 * TENANTS} messages over ${TENANTS} tenants`);
    await runOnce(outboxTenants, 2 * TENANTS);
    /** A/B pairs of bare BullMQ and `sender`, the order swapped every pair. */
    const pairs = async (sender: Sender, what: string) => {
      const bare: Run[] = [];
      const measured: Run[] = [];
      for (let round = 0; round < sizes.rounds; round += 1) {
        const pair = [
          { sender: ladder[0], runs: bare },
          { sender, runs: measured },
        ];
        for (const { sender: next, runs } of round % 2 === 0 ? pair : pair.reverse())
          runs.push(await runOnce(next, sizes.messages));
        progress(
          `${what} round ${round + 1}/${sizes.rounds}: bare ${rate(bare[round]).toFixed(0)}/s, outbox ${rate(measured[round]).toFixed(0)}/s`,
        );
      }
      return { bare, measured };
    };
    const { bare: bareRuns, measured: outboxRuns } = await pairs(outbox, 'one integration');
    const spreadRuns = await pairs(outboxTenants, `${TENANTS} tenants`);
    const tenantRatios = spreadRuns.measured.map((run, i) => spreadRuns.bare[i].seconds / run.seconds);
    report.atLeast(
      'outbox.throughputTenants',
      `outbox: messages per second against bare BullMQ, the messages spread over ${TENANTS} tenants (${sizes.rounds} A/B rounds of ${sizes.messages}, concurrency ${CONCURRENCY})`,
      median(tenantRatios),
      TARGET,
      {
        baseline: 'bare BullMQ Queue + Worker, fetch with the header',
        spread: { ...spread(tenantRatios), kind: 'range' },
      },
    );
    const ratios = outboxRuns.map((run, i) => bareRuns[i].seconds / run.seconds);
    const addedWallUs = outboxRuns.map((run, i) => ((run.seconds - bareRuns[i].seconds) / sizes.messages) * 1e6);
    const runsLabel = `${sizes.rounds} A/B rounds of ${sizes.messages} messages, concurrency ${CONCURRENCY}`;
    report.atLeast(
      'outbox.throughput',
      `outbox: messages per second against bare BullMQ (${runsLabel})`,
      median(ratios),
      TARGET,
      { baseline: 'bare BullMQ Queue + Worker, fetch with the header', spread: { ...spread(ratios), kind: 'range' } },
    );
    report.info(
      'outbox.addedWall',
      'outbox: time it adds per message (1/rate − 1/bare rate, round by round)',
      median(addedWallUs),
      `${median(addedWallUs).toFixed(0)} µs (medians ${median(outboxRuns.map(rate)).toFixed(0)}/s against ${median(bareRuns.map(rate)).toFixed(0)}/s)`,
      'bare BullMQ, same round',
      { ...spread(addedWallUs), kind: 'range' },
    );
    const total = (run: Run) => run.cpuUs + run.otherCpuUs;
    const cpuRatios = outboxRuns.map((run, i) => total(bareRuns[i]) / total(run));
    const addedCpuUs = outboxRuns.map((run, i) => total(run) - total(bareRuns[i]));
    report.info(
      'outbox.cpuRatio',
      'outbox: messages per CPU-second (this process, redis-server, platform) against bare BullMQ',
      median(cpuRatios),
      `${median(cpuRatios).toFixed(3)}×`,
      'bare BullMQ, same round',
      { ...spread(cpuRatios), kind: 'range' },
    );
    report.info(
      'outbox.addedCpu',
      'outbox: CPU it adds per message, enqueue to answer (this process, redis-server, platform)',
      median(addedCpuUs),
      `${median(addedCpuUs).toFixed(0)} µs (bare ${median(bareRuns.map(total)).toFixed(0)} µs, of which this process ${median(bareRuns.map((r) => r.cpuUs)).toFixed(0)} µs)`,
      'bare BullMQ, same round',
      { ...spread(addedCpuUs), kind: 'range' },
    );

    const perMessage = (runs: Run[]) =>
      `${median(runs.map((run) => run.redisCommands)).toFixed(2)}, of which ${median(runs.map((run) => run.scriptCalls)).toFixed(2)} script calls`;
    report.info(
      'outbox.redisCommands',
      'outbox: Redis commands per message, enqueue to answer (INFO commandstats)',
      median(outboxRuns.map((run) => run.redisCommands)),
      `${perMessage(outboxRuns)} (bare: ${perMessage(bareRuns)})`,
      'bare BullMQ, same rounds',
    );

    // The ladder: each step's CPU per message (every process) against the step before it, round by round.
    const steps = ladder.map(() => [] as Run[]);
    for (let round = 0; round < sizes.ladderRounds; round += 1) {
      const order = ladder.map((_, i) => (i + round) % ladder.length);
      for (const i of order) steps[i].push(await runOnce(ladder[i], sizes.messages));
      progress(
        `ladder round ${round + 1}/${sizes.ladderRounds}: ${steps.map((s) => rate(s[round]).toFixed(0)).join(', ')} /s`,
      );
    }
    for (let i = 1; i < ladder.length; i += 1) {
      const added = steps[i].map((run, round) => total(run) - total(steps[i - 1][round]));
      report.info(
        `outbox.ladder${i}`,
        `outbox ladder: CPU per message added by ${i === ladder.length - 1 ? '+ the outbox itself (checks, events, telemetry)' : ladder[i].name}`,
        median(added),
        `${median(added).toFixed(0)} µs`,
        `the step before (${ladder[i - 1].name})`,
        { ...spread(added), kind: 'range' },
      );
    }

    const expected = all.reduce((sum, run) => sum + run.messages, 0);
    report.exactly(
      'outbox.answered',
      'outbox and bare BullMQ: messages the platform answered 2xx, every run',
      all.reduce((sum, run) => sum + run.answered, 0),
      expected,
      'emulator counter',
    );
    report.exactly(
      'outbox.keys',
      'outbox and bare BullMQ: distinct idempotency keys the platform processed, every run',
      all.reduce((sum, run) => sum + run.keys, 0),
      expected,
      'emulator counter',
    );
    report.detail('outbox', {
      sizes,
      concurrency: CONCURRENCY,
      bare: bareRuns,
      outbox: outboxRuns,
      tenants: { count: TENANTS, bare: spreadRuns.bare, outbox: spreadRuns.measured },
      ladder: ladder.map((sender, i) => ({ name: sender.name, runs: steps[i] })),
    });
  } finally {
    for (const sender of senders) await sender.close();
    if (stats.isOpen) stats.destroy();
    await app?.close();
    await platform.close();
    await redis.stop();
  }
}

/** The commands that call a script: each one command on the wire, whatever the script runs inside Redis. */
const SCRIPT_CALLS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

/** Redis's command counts so far (it counts the commands a script runs as well as the script's call). */
function redisCommandStats(info: string): { all: number; scripts: number } {
  let all = 0;
  let scripts = 0;
  for (const line of info.split('\n')) {
    const match = /^cmdstat_([^:|]+):calls=(\d+)/.exec(line.trim());
    if (!match) continue;
    all += Number(match[2]);
    if (SCRIPT_CALLS.has(match[1])) scripts += Number(match[2]);
  }
  return { all, scripts };
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

/**
 * The outbox as an application uses it: `enqueue`, its own worker, the `sent` event; with `tenants`, each message
 * for one of that many tenants in turn (the default integration's otherwise).
 */
function outboxSender(outbox: PlatformOutbox, tenants?: number): Sender {
  const completions = new Completions();
  outbox.on('sent', () => completions.add());
  outbox.on('failed', ({ reason }) => console.error(`outbox: a message failed: ${reason}`));
  let sent = 0;
  const tenantOf = () => (tenants === undefined ? {} : { tenant: `tenant-${(sent += 1) % tenants}` });
  return {
    name: tenants === undefined ? 'outbox' : `outbox-${tenants}-tenants`,
    enqueue: (key, body) =>
      outbox.enqueue({ ...tenantOf(), method: 'POST', path: '/api/messages', body, idempotencyKey: key }),
    delivered: (count) => completions.after(count),
    close: async () => undefined,
  };
}

/** What a step of the ladder takes from the outbox, on top of bare BullMQ. */
interface BareOptions {
  readonly name: string;
  /** The job options `enqueue` gives: attempts, a custom back-off, completed jobs kept by age, failed ones kept. */
  readonly jobOptions?: boolean;
  /** The job read back after `add`, as `enqueue` does to refuse another request under a taken key. */
  readonly readBack?: boolean;
  /** Sent as the worker sends: through the integration's `PlatformFetch`, with a timeout signal and `Headers`. */
  readonly platformFetch?: PlatformFetch;
}

/**
 * BullMQ as a user without the library would write it: the key as the job's id, the body posted with `fetch` and
 * the token pasted in, on a node-redis client as the outbox gives BullMQ. `options` add the outbox's parts one by one.
 */
async function bareBullMq(redisUrl: string, url: string, authorization: string, options: BareOptions): Promise<Sender> {
  const client = createClient({ url: redisUrl });
  await client.connect();
  const connection = client as unknown as ConnectionOptions;
  const queueName = `bench-${options.name.replace(/[^a-z]+/g, '-')}`;
  const queue = new Queue(queueName, { connection });
  const completions = new Completions();
  const send = async (key: string, body: unknown): Promise<Response> => {
    if (!options.platformFetch)
      return fetch(url, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
    const headers = new Headers({ 'content-type': 'application/json', 'idempotency-key': key });
    const init: PlatformFetchInit = {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
      retry: false,
    };
    return options.platformFetch.fetch('/api/messages', init);
  };
  const worker = new Worker(
    queueName,
    async (job) => {
      const response = await send(String(job.id), job.data);
      await response.body?.cancel();
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return response.status;
    },
    {
      connection,
      concurrency: CONCURRENCY,
      ...(options.jobOptions && { settings: { backoffStrategy: () => 1_000 } }),
    },
  );
  worker.on('completed', () => completions.add());
  worker.on('failed', (_job, error) => console.error(`${options.name}: a job failed: ${error.message}`));
  const jobOptions = options.jobOptions
    ? { attempts: 12, backoff: { type: 'outbox' }, removeOnComplete: { age: 86_400 }, removeOnFail: false }
    : {};
  return {
    name: options.name,
    enqueue: async (key, body) => {
      await queue.add('message', body, { jobId: key, ...jobOptions });
      if (options.readBack) await queue.getJob(key);
    },
    delivered: (count) => completions.after(count),
    close: async () => {
      await worker.close();
      await queue.close();
      client.destroy();
    },
  };
}
