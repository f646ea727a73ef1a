// The outbox soak: `npm run soak -- --outbox [--quick] [--scale S] [--replicas N] [--tenants T] [--rate R] [--platform
// honours|ignores] [--report f.json]`. N application processes (test/outbox/outbox-replica.child.mjs, workers on)
// enqueue messages for the default integration, a named integration and T tenants (forTenants), R per second each, into
// one BullMQ queue on a real redis-server (append-only file, fsync on every write), while the fault schedule runs:
// platform 503 bursts and a long outage, 429 storms with Retry-After (the emulator's fault controls), Redis killed and
// restarted twice on the same port, workers SIGKILLed mid-send (their sends reached the platform, the answers held
// back), and the portal's certificate cut-over. The platform is the emulator behind a fault proxy that counts every
// request it processed by idempotency key and by owner (the integration the token belongs to); with `--platform
// ignores` the proxy takes the key off, as a platform that does not honour it. Every duration is multiplied by --scale
// (default 1); --quick runs the whole schedule in under 2 minutes. Last line: `outbox soak: N enqueued, O delivered
// once, T delivered twice or more, D dead-lettered, L lost, Q still queued, W to the wrong owner`.
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
    quick: { type: 'boolean', default: false },
    scale: { type: 'string', default: '1' },
    replicas: { type: 'string', default: '3' },
    tenants: { type: 'string', default: '2' },
    rate: { type: 'string', default: '5' },
    platform: { type: 'string', default: 'honours' },
    report: { type: 'string' },
  },
});
if (!['honours', 'ignores'].includes(args.platform)) throw new Error('--platform must be honours or ignores');
const QUICK = args.quick;
const SCALE = QUICK ? 0.025 : Number(args.scale);
const REPLICAS = Number(args.replicas);
const TENANTS = Number(args.tenants);
const RATE = Number(args.rate);
const HONOURS = args.platform === 'honours';
const CHILD = fileURLToPath(new URL('../test/outbox/outbox-replica.child.mjs', import.meta.url));
const QUEUE = 'soak-outbox';
const NAMED = 'partner';
const startedAt = Date.now();
const log = (line) => process.stderr.write(`[outbox soak ${((Date.now() - startedAt) / 1000).toFixed(1)} s] ${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const scaled = (ms) => Math.max(1_000, Math.round(ms * SCALE));

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

  get alive() {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  request(command, fields = {}) {
    const id = (this.nextId += 1);
    return new Promise((resolve, reject) => {
      if (!this.alive) return reject(new Error(`replica ${this.index} exited`));
      this.pending.set(id, { resolve, reject });
      // A process killed between the check and the send: its channel is closed, and the request fails like the rest.
      this.child.send({ id, command, ...fields }, (error) => {
        if (!error) return;
        this.pending.delete(id);
        reject(error);
      });
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

/**
 * The platform's side: every API request the platform processed (answered 2xx, not from its journal), by the key
 * the client sent and by the integration the token belongs to (the emulator's answer names it).
 */
class PlatformLedger {
  constructor(owners) {
    /** machineId → the owner's name in this soak. */
    this.owners = owners;
    /** key → { processed, replayed, owners: Set of owner names } */
    this.byKey = new Map();
    this.byOwner = {};
    this.unkeyed = 0;
  }

  observe(req, reply, replyBody) {
    if (reply.statusCode < 200 || reply.statusCode >= 300) return;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') {
      this.unkeyed += 1;
      return;
    }
    const entry = this.byKey.get(key) ?? { processed: 0, replayed: 0, owners: new Set() };
    this.byKey.set(key, entry);
    if (reply.headers['idempotent-replayed'] === 'true') {
      entry.replayed += 1;
      return;
    }
    let answer = {};
    try {
      answer = JSON.parse(replyBody.toString('utf8'));
    } catch {
      // Counted below as an unknown owner.
    }
    const owner = this.owners.get(answer.machineId) ?? 'unknown';
    entry.processed += 1;
    entry.owners.add(owner);
    this.byOwner[owner] = (this.byOwner[owner] ?? 0) + 1;
  }
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'platform-auth-outbox-soak-'));
  const redisPort = await freePort();
  let redis = await launchRedis(redisPort, work, { appendOnly: true });
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const platform = await PlatformEmulator.start({ tokenLifetimeSeconds: 60 });
  const owners = new Map();
  const ledger = new PlatformLedger(owners);
  const proxy = await startFaultProxy(platform.url, {
    observe: (req, _body, reply, replyBody) => ledger.observe(req, reply, replyBody),
    stripHeaders: HONOURS ? [] : ['idempotency-key'],
  });
  const audience = new URL(platform.url).host;
  const register = async (name) => {
    const integration = await platform.createIntegration({ name: `soak ${name}` });
    owners.set(integration.machineId, name);
    return integration;
  };
  const through = (integration) => ({ ...integration.moduleOptions, baseUrl: proxy.url, audience });

  const integration = await register('default');
  const named = await register(NAMED);
  const next = await createTestCredentials();
  const tenants = {};
  for (let t = 0; t < TENANTS; t += 1) tenants[`tenant-${t}`] = through(await register(`tenant-${t}`));
  const settings = {
    // The next pair stands by: the cut-over below registers it at the platform, and the replicas switch to it.
    integration: {
      ...through(integration),
      next: { privateKey: next.privateKeyPem, certificate: next.certificatePem },
    },
    integrations: { [NAMED]: through(named) },
    tenants,
    outbox: {
      connection: { url: redisUrl },
      queueName: QUEUE,
      worker: { concurrency: 4, lockDuration: 2_000 },
      retry: { attempts: 40, delayMs: 200, maxDelayMs: QUICK ? 3_000 : scaled(60_000) },
      sendTimeoutMs: 5_000,
      enqueueTimeoutMs: 2_000,
    },
  };
  const events = { queued: 0, sent: 0, retried: 0, failed: 0, 'dead-lettered': 0 };
  const deadLetteredEvents = new Set();
  const onEvent = (event, payload) => {
    events[event] += 1;
    if (event === 'dead-lettered') deadLetteredEvents.add(payload.id);
  };
  const replicas = await Promise.all(Array.from({ length: REPLICAS }, (_, i) => Replica.start(i, settings, onEvent)));
  log(
    `${REPLICAS} replicas, default + ${NAMED} + ${TENANTS} tenants, ${RATE} messages/s each, ` +
      `${QUICK ? 'quick' : `scale ${SCALE}`}, a platform that ${args.platform} Idempotency-Key, redis on ${redisPort}`,
  );

  /** Job id → { key, owner } of each message `enqueue` acknowledged; failed enqueues are retried under their key. */
  const acknowledged = new Map();
  let retryLater = [];
  let sequence = 0;
  const targets = ['default', NAMED, ...Object.keys(tenants)];
  let producing = true;
  const produce = async () => {
    while (producing) {
      const round = retryLater.splice(0);
      for (let i = 0; i < RATE * REPLICAS; i += 1) {
        const owner = targets[sequence % targets.length];
        const key = `soak-${(sequence += 1)}`;
        round.push({
          method: 'POST',
          path: '/api/messages',
          body: { n: sequence, owner, text: `message ${sequence}` },
          idempotencyKey: key,
          ...(owner === NAMED && { integration: NAMED }),
          ...(owner.startsWith('tenant-') && { tenant: owner }),
        });
      }
      const live = replicas.filter((replica) => replica.alive);
      await Promise.all(
        live.map(async (replica, r) => {
          const share = round.filter((_, i) => i % live.length === r);
          const ids = await replica
            .request('enqueue', { messages: share })
            .catch(() => share.map(() => ({ error: 'exited' })));
          ids.forEach((id, i) =>
            typeof id === 'string'
              ? acknowledged.set(id, { key: share[i].idempotencyKey, owner: share[i].body.owner })
              : retryLater.push(share[i]),
          );
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
  const killMidSend = async (index) => {
    // Sends already at the platform when the worker dies: processed there, their answers never heard.
    const heldBefore = proxy.answered.held;
    proxy.hold(1_500);
    await sleep(1_000);
    await replicas[index].kill();
    await sleep(600);
    fault(
      'worker killed mid-send',
      `replica ${index} SIGKILLed with ${proxy.answered.held - heldBefore} answers held back; started again`,
    );
    replicas[index] = await Replica.start(index, settings, onEvent);
  };
  let redisRestarts = 0;
  const restartRedis = async () => {
    const exited = new Promise((resolve) => redis.once('exit', resolve));
    redis.kill('SIGKILL');
    await exited;
    await sleep(2_000);
    redis = await launchRedis(redisPort, work, { appendOnly: true });
    redisRestarts += 1;
    fault('Redis restart', `SIGKILL, started again on the same port and append-only file after 2 s (${redisRestarts})`);
  };
  const outageMs = scaled(600_000);
  const schedule = [
    async () => {
      proxy.inject({ status: 503, retryAfter: 1 }, 50);
      fault('503 burst', 'the next 50 API requests answered 503, Retry-After: 1');
    },
    async () => {
      for (let i = 0; i < 200; i += 1) platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: 1 }, 'api');
      fault('429 storm', 'the emulator answers its next 200 API requests 429, Retry-After: 1');
    },
    () => killMidSend(0),
    restartRedis,
    async () => {
      platform.replaceCertificate(integration.machineId, next.certificatePem);
      platform.revokeAllTokens();
      fault('certificate cut-over', 'the portal registers the next certificate; every token revoked');
    },
    async () => {
      proxy.outage({ status: 503, retryAfter: 5 }, outageMs);
      fault('platform outage', `every API request answered 503 for ${outageMs / 1000} s`);
      await sleep(outageMs);
    },
    restartRedis,
    () => killMidSend(REPLICAS - 1),
  ];
  const step = QUICK ? 4_000 : scaled(30_000);
  for (const run of schedule) {
    await sleep(step);
    await run();
  }
  await sleep(step);
  producing = false;
  await production;
  while (retryLater.length > 0) {
    const share = retryLater.splice(0);
    const ids = await replicas[0].request('enqueue', { messages: share });
    ids.forEach((id, i) =>
      typeof id === 'string'
        ? acknowledged.set(id, { key: share[i].idempotencyKey, owner: share[i].body.owner })
        : retryLater.push(share[i]),
    );
  }
  log(`enqueueing stopped: ${acknowledged.size} acknowledged; draining`);

  const status = () => replicas[0].request('status');
  const drainUntil = Date.now() + (QUICK ? 60_000 : scaled(600_000) + 60_000);
  while ((await status()).depth > 0 && Date.now() < drainUntil) await sleep(1_000);
  // The last sends' answers reach the ledger before their jobs are marked completed: nothing is in flight now.
  const final = await status();

  // Job states from Redis, BullMQ's keys read directly: what is true whatever the workers' events said.
  const client = createClient({ url: redisUrl });
  await client.connect();
  const stateOf = async (id) => {
    for (const state of ['completed', 'failed', 'delayed', 'wait', 'active', 'prioritized']) {
      const member =
        state === 'completed' || state === 'failed' || state === 'delayed' || state === 'prioritized'
          ? (await client.zScore(`bull:{${QUEUE}}:${QUEUE}:${state}`, id)) !== null
          : (await client.lPos(`bull:{${QUEUE}}:${QUEUE}:${state}`, id)) !== null;
      if (member) return state;
    }
    return (await client.exists(`bull:{${QUEUE}}:${QUEUE}:${id}`)) ? 'unlisted' : 'missing';
  };
  const states = {};
  const counts = {
    deliveredOnce: 0,
    deliveredTwice: 0,
    extraDeliveries: 0,
    replayed: 0,
    deadLettered: 0,
    refused: 0,
    stillQueued: 0,
    lost: 0,
    wrongOwner: 0,
    completedNeverDelivered: 0,
    deliveredButDeadLettered: 0,
    falseDeadLetteredEvents: 0,
  };
  const lostIds = [];
  for (const [id, { key, owner }] of acknowledged) {
    const state = await stateOf(id);
    states[state] = (states[state] ?? 0) + 1;
    const seen = ledger.byKey.get(key);
    const processed = seen?.processed ?? 0;
    counts.replayed += seen?.replayed ?? 0;
    if (seen && [...seen.owners].some((who) => who !== owner)) counts.wrongOwner += 1;
    if (processed === 1) counts.deliveredOnce += 1;
    if (processed >= 2) {
      counts.deliveredTwice += 1;
      counts.extraDeliveries += processed - 1;
    }
    if (deadLetteredEvents.has(id) && processed > 0) counts.falseDeadLetteredEvents += 1;
    if (state === 'completed' && processed === 0) counts.completedNeverDelivered += 1;
    if (processed > 0) {
      if (state === 'failed') counts.deliveredButDeadLettered += 1;
      continue;
    }
    if (state === 'failed') {
      const reason = (await client.hGet(`bull:{${QUEUE}}:${QUEUE}:${id}`, 'failedReason')) ?? '';
      if (reason.startsWith('refused: ')) counts.refused += 1;
      else counts.deadLettered += 1;
    } else if (['delayed', 'wait', 'active', 'prioritized'].includes(state)) counts.stillQueued += 1;
    else {
      counts.lost += 1;
      if (lostIds.length < 20) lostIds.push({ id, state });
    }
  }
  await client.quit();

  const N = acknowledged.size;
  const report = {
    minutes: Math.round((Date.now() - startedAt) / 6_000) / 10,
    quick: QUICK,
    scale: SCALE,
    platform: args.platform,
    replicas: REPLICAS,
    owners: targets,
    enqueued: N,
    ...counts,
    jobStates: states,
    lostIds,
    atThePlatform: {
      byOwner: ledger.byOwner,
      keys: ledger.byKey.size,
      unkeyed: ledger.unkeyed,
      emulatorJournal: platform.counters.idempotency,
      emulatorApiCalls: platform.counters.apiCalls,
      faultProxy: proxy.answered,
    },
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
  process.stdout.write(
    `outbox soak: ${N} enqueued, ${counts.deliveredOnce} delivered once, ${counts.deliveredTwice} delivered twice or more, ` +
      `${counts.deadLettered} dead-lettered, ${counts.lost} lost, ${counts.stillQueued} still queued, ` +
      `${counts.wrongOwner} to the wrong owner (a platform that ${args.platform} Idempotency-Key)\n`,
  );
  const held =
    counts.lost === 0 &&
    counts.stillQueued === 0 &&
    counts.wrongOwner === 0 &&
    counts.refused === 0 &&
    (!HONOURS || counts.deliveredTwice === 0);
  process.exitCode = held ? 0 : 1;
}

await main();
