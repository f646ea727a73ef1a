// The outbox soak: `npm run soak -- --outbox [--scale S] [--replicas N] [--tenants T] [--rate R] [--report f.json]`.
// N application processes (test/outbox/outbox-replica.child.mjs, workers on) enqueue messages for the default
// integration and T tenants, R per second each, into one BullMQ queue on a real redis-server (append-only file,
// fsync on every write), while the fault schedule runs: platform 503 bursts, 429 storms with Retry-After, a long
// outage (10 minutes at scale 1), Redis killed and restarted, worker processes killed mid-send, and the portal's
// certificate cut-over to the next pair. The platform is the emulator with its idempotency journal, behind a fault
// proxy. Every duration is multiplied by --scale (default 1), so a quick run is possible. Last line:
// `outbox soak: N enqueued, D delivered, L lost, X duplicated, Q still queued`.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createClient } from 'redis';
import { PlatformEmulator, createTestCredentials } from '../dist/testing/index.js';
import { freePort, launchRedis, startFaultProxy } from './support.mjs';

const { values: args } = parseArgs({
  options: {
    outbox: { type: 'boolean' },
    scale: { type: 'string', default: '1' },
    replicas: { type: 'string', default: '3' },
    tenants: { type: 'string', default: '3' },
    rate: { type: 'string', default: '5' },
    report: { type: 'string' },
  },
});
const SCALE = Number(args.scale);
const REPLICAS = Number(args.replicas);
const TENANTS = Number(args.tenants);
const RATE = Number(args.rate);
const CHILD = fileURLToPath(new URL('../test/outbox/outbox-replica.child.mjs', import.meta.url));
const QUEUE = 'soak-outbox';
const startedAt = Date.now();
const log = (line) => process.stderr.write(`[outbox soak ${((Date.now() - startedAt) / 1000).toFixed(1)} s] ${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const scaled = (ms) => Math.max(200, Math.round(ms * SCALE));

/** An application process with the outbox; its requests reject once it is killed. */
class Replica {
  static async start(index, settings, onEvent) {
    const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`replica ${index} exited (${code}) while loading`)));
    });
    const replica = new Replica(child, index, onEvent);
    await replica.request('start', settings);
    return replica;
  }

  constructor(child, index, onEvent) {
    this.child = child;
    this.index = index;
    this.nextId = 0;
    this.pending = new Map();
    child.on('message', (message) => {
      if (message.event !== undefined) onEvent(message.event, message.payload);
      if (message.id === undefined) return;
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiting?.reject(new Error(message.error));
      else waiting?.resolve(message.result);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        for (const { reject } of this.pending.values()) reject(new Error(`replica ${index} exited`));
        this.pending.clear();
        resolve();
      }),
    );
  }

  request(command, fields = {}) {
    const id = (this.nextId += 1);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, command, ...fields });
    });
  }

  async kill() {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  async stop() {
    await this.request('stop').catch(() => undefined);
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'platform-auth-outbox-soak-'));
  const redisPort = await freePort();
  let redis = await launchRedis(redisPort, work, { appendOnly: true });
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const platform = await PlatformEmulator.start({ tokenLifetimeSeconds: 60 });
  const proxy = await startFaultProxy(platform.url);
  const audience = new URL(platform.url).host;
  const through = (integration) => ({ ...integration.moduleOptions, baseUrl: proxy.url, audience });

  const integration = await platform.createIntegration();
  const next = await createTestCredentials();
  const tenants = {};
  for (let t = 0; t < TENANTS; t += 1) tenants[`tenant-${t}`] = through(await platform.createIntegration());
  const settings = {
    // The next pair stands by: the cut-over below registers it at the platform, and the replicas switch to it.
    integration: {
      ...through(integration),
      next: { privateKey: next.privateKeyPem, certificate: next.certificatePem },
    },
    tenants,
    outbox: {
      connection: { url: redisUrl },
      queueName: QUEUE,
      worker: { concurrency: 4, lockDurationMs: 2_000 },
      retry: { attempts: 40, delayMs: 200, maxDelayMs: scaled(60_000) },
      sendTimeoutMs: 5_000,
      enqueueTimeoutMs: 2_000,
    },
  };
  const events = { sent: 0, retried: 0, failed: 0, 'dead-lettered': 0, queued: 0 };
  const onEvent = (event) => (events[event] += 1);
  const replicas = await Promise.all(Array.from({ length: REPLICAS }, (_, i) => Replica.start(i, settings, onEvent)));
  log(`${REPLICAS} replicas, ${TENANTS} tenants, ${RATE} messages/s each, scale ${SCALE}, redis on ${redisPort}`);

  /** Keys Redis acknowledged, and messages whose enqueue failed, to be enqueued again under the same key. */
  const acknowledged = new Set();
  let retryLater = [];
  let sequence = 0;
  const targets = ['default', ...Object.keys(tenants)];
  let producing = true;
  const produce = async () => {
    while (producing) {
      const round = retryLater.splice(0);
      for (let i = 0; i < RATE * REPLICAS; i += 1) {
        const target = targets[sequence % targets.length];
        const key = `soak-${(sequence += 1)}`;
        round.push({
          method: 'POST',
          path: '/api/messages',
          body: { n: sequence, text: `message ${sequence}` },
          idempotencyKey: key,
          ...(target !== 'default' && { tenant: target }),
        });
      }
      const live = replicas.filter((replica) => replica.child.exitCode === null && replica.child.signalCode === null);
      await Promise.all(
        live.map(async (replica, r) => {
          const share = round.filter((_, i) => i % live.length === r);
          const ids = await replica
            .request('enqueue', { messages: share })
            .catch(() => share.map(() => ({ error: 'exited' })));
          ids.forEach((id, i) => (typeof id === 'string' ? acknowledged.add(id) : retryLater.push(share[i])));
        }),
      );
      await sleep(1_000);
    }
  };
  const production = produce();

  const faults = [];
  const fault = (kind, detail) => {
    faults.push({ kind, atS: Math.round((Date.now() - startedAt) / 100) / 10, detail });
    log(`fault: ${kind} (${detail})`);
  };
  const restartReplica = async (index) => {
    await replicas[index].kill();
    replicas[index] = await Replica.start(index, settings, onEvent);
  };
  const schedule = [
    async () => {
      proxy.inject({ status: 503, retryAfter: 1 }, 50);
      fault('503 burst', 'the next 50 API requests answered 503, Retry-After: 1');
    },
    async () => {
      proxy.inject({ status: 429, retryAfter: 1 }, 200);
      fault('429 storm', 'the next 200 API requests answered 429, Retry-After: 1');
    },
    async () => {
      fault('worker killed', 'replica 0 SIGKILLed mid-traffic, started again');
      await restartReplica(0);
    },
    async () => {
      fault('Redis restart', 'SIGKILL, started again on its append-only file after 2 s');
      const exited = new Promise((resolve) => redis.once('exit', resolve));
      redis.kill('SIGKILL');
      await exited;
      await sleep(2_000);
      redis = await launchRedis(redisPort, work, { appendOnly: true });
    },
    async () => {
      platform.replaceCertificate(integration.machineId, next.certificatePem);
      platform.revokeAllTokens();
      fault('certificate cut-over', 'the portal registers the next certificate; every token revoked');
    },
    async () => {
      const ms = scaled(600_000);
      proxy.outage({ status: 503, retryAfter: 5 }, ms);
      fault('platform outage', `every API request answered 503 for ${ms / 1000} s`);
      await sleep(ms);
    },
    async () => {
      fault('worker killed', `replica ${REPLICAS - 1} SIGKILLed, started again`);
      await restartReplica(REPLICAS - 1);
    },
  ];
  const step = scaled(30_000);
  for (const run of schedule) {
    await sleep(step);
    await run();
  }
  await sleep(step);
  producing = false;
  await production;
  while (retryLater.length > 0) {
    const ids = await replicas[0].request('enqueue', { messages: retryLater.splice(0) });
    ids.forEach((id) => typeof id === 'string' && acknowledged.add(id));
  }
  log(`enqueueing stopped: ${acknowledged.size} acknowledged; draining`);

  const status = () => replicas[0].request('status');
  const drainUntil = Date.now() + scaled(600_000) + 60_000;
  while ((await status()).depth > 0 && Date.now() < drainUntil) await sleep(1_000);

  const client = createClient({ url: redisUrl });
  await client.connect();
  const stateOf = async (id) => {
    for (const state of ['completed', 'failed', 'delayed'])
      if ((await client.zScore(`bull:${QUEUE}:${state}`, id)) !== null) return state;
    return (await client.exists(`bull:${QUEUE}:${id}`)) ? 'queued' : 'missing';
  };
  const states = { completed: 0, failed: 0, delayed: 0, queued: 0, missing: 0 };
  for (const id of acknowledged) states[await stateOf(id)] += 1;
  await client.quit();
  const final = await status();

  const { keys, duplicates, mismatches } = platform.counters.idempotency;
  const N = acknowledged.size;
  const D = states.completed;
  const Q = states.delayed + states.queued;
  const L = N - D - Q;
  // Keys the platform processed beyond the messages that ended sent: a message processed under a second key.
  const X = Math.max(0, keys - D) + mismatches;
  const report = {
    minutes: Math.round((Date.now() - startedAt) / 6_000) / 10,
    scale: SCALE,
    replicas: REPLICAS,
    tenants: TENANTS,
    enqueued: N,
    delivered: D,
    lost: L,
    duplicated: X,
    stillQueued: Q,
    deadLetteredOrFailed: states.failed,
    missing: states.missing,
    platform: { keys, journalReplays: duplicates, mismatches, faultProxy: proxy.answered },
    events,
    final,
    faults,
  };
  if (args.report) writeFileSync(args.report, `${JSON.stringify(report, null, 2)}\n`);
  log(JSON.stringify(report));
  await Promise.all(replicas.map((replica) => replica.stop()));
  proxy.close();
  await platform.close();
  redis.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
  process.stdout.write(`outbox soak: ${N} enqueued, ${D} delivered, ${L} lost, ${X} duplicated, ${Q} still queued\n`);
  process.exitCode = L === 0 && X === 0 ? 0 : 1;
}

await main();
