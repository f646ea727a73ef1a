// The fleet soak: `npm run soak [-- --quick] [--replicas N] [--minutes M] [--report file.json]`.
// N replica processes sharing tokens through a real redis-server, the platform emulator with short token lifetimes,
// application traffic on every replica, and a schedule of faults: token-endpoint 503 bursts, 429 with Retry-After,
// timeouts and dropped connections, Redis frozen then killed and restarted, the platform clock jumping, a replica
// killed and restarted, the portal cut-over to the next certificate and the credential files promoted. It writes a
// JSON report and ends with `soak: N calls, F failed, E exchanges for L token lifetimes, R refused`. With --outbox,
// soak/outbox.mjs runs instead; with --calls, soak/calls.mjs.
import { fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PlatformEmulator, createTestCredentials } from '../dist/testing/index.js';
import { freePort } from './support.mjs';

// `--outbox`: the outbox soak (soak/outbox.mjs) instead, with options of its own.
if (process.argv.includes('--outbox')) {
  await import('./outbox.mjs');
  process.exit();
}
// `--calls`: the reliable-calls soak (soak/calls.mjs): retries, the retry budget and the shared rate limit.
if (process.argv.includes('--calls')) {
  await import('./calls.mjs');
  process.exit();
}

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    replicas: { type: 'string' },
    minutes: { type: 'string' },
    report: { type: 'string' },
  },
});
const QUICK = args.quick;
const REPLICAS = Number(args.replicas ?? 4);
/** Token lifetime at the emulator: short, so one run covers many renewals. */
const LIFETIME_S = QUICK ? 15 : 60;
/** One step of the fault schedule; the whole schedule is one cycle, repeated until the run's minutes are over. */
const STEP_MS = QUICK ? 9_000 : 45_000;
const MINUTES = Number(args.minutes ?? (QUICK ? 0 : 30));
const REDIS_SERVER = '/usr/bin/redis-server';
const REPLICA = fileURLToPath(new URL('./replica.mjs', import.meta.url));
const STORE_TIMING = { operationTimeoutMs: 300, lockTtlMs: 3_000, waitTimeoutMs: 5_000 };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => process.stderr.write(`[soak ${((Date.now() - startedAt) / 1000).toFixed(1)} s] ${line}\n`);
const startedAt = Date.now();

/** redis-server on a fixed port, so a restart is the same address for the replicas. */
class Redis {
  constructor(port, dir) {
    this.port = port;
    this.dir = dir;
  }

  async launch() {
    const child = spawn(
      REDIS_SERVER,
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    await new Promise((resolve, reject) => {
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) resolve();
      });
      child.stderr.resume();
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
    });
    child.stdout.resume();
  }

  freeze() {
    this.child.kill('SIGSTOP');
  }

  thaw() {
    this.child.kill('SIGCONT');
  }

  async kill() {
    const child = this.child;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  }
}

/** A replica process and its IPC requests. */
class Replica {
  static async spawn(env, index) {
    const child = fork(REPLICA, [], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`replica ${index} exited (${code}) while starting`)));
    });
    return new Replica(child, index);
  }

  constructor(child, index) {
    this.child = child;
    this.index = index;
    this.nextId = 0;
    this.pending = new Map();
    child.on('message', (message) => {
      if (message.id === undefined) return;
      this.pending.get(message.id)?.resolve(message.result);
      this.pending.delete(message.id);
    });
    child.once('exit', () => {
      for (const { reject } of this.pending.values()) reject(new Error(`replica ${index} exited`));
      this.pending.clear();
    });
  }

  request(command, fields = {}) {
    const id = (this.nextId += 1);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, command, ...fields });
    });
  }

  kill() {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    return exited;
  }
}

/** Credential files as a Kubernetes secret volume holds them: `current/` and `next/` swapped by one rename each. */
class CredentialFiles {
  constructor(root) {
    this.root = root;
    this.version = 0;
  }

  path(pair, file) {
    return join(this.root, pair, file);
  }

  write(pair, credentials) {
    this.version += 1;
    const dir = join(this.root, `..${pair}-${this.version}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'tls.key'), credentials.privateKeyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'tls.crt'), credentials.certificatePem);
    const staged = join(this.root, `${pair}.tmp`);
    symlinkSync(dir, staged);
    renameSync(staged, join(this.root, pair));
  }
}

/** Replica latencies merged per phase: p50, p99, max in ms. */
function summarize(latencies) {
  if (latencies.length === 0) return { p50: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(latencies).sort();
  const at = (q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), max: Math.round(sorted[sorted.length - 1] * 10) / 10 };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'platform-auth-soak-'));
  const redis = new Redis(await freePort(), work);
  await redis.launch();
  const platform = await PlatformEmulator.start({ tokenLifetimeSeconds: LIFETIME_S, journalLimit: 1_000_000 });
  const integration = await platform.createIntegration();
  const files = new CredentialFiles(join(work, 'secrets'));
  mkdirSync(files.root);
  let next = await createTestCredentials();
  files.write('current', integration);
  files.write('next', next);
  const env = {
    ...process.env,
    PLATFORM_BASE_URL: platform.url,
    PLATFORM_MACHINE_ID: integration.machineId,
    PLATFORM_PRIVATE_KEY_PATH: files.path('current', 'tls.key'),
    PLATFORM_CERTIFICATE_PATH: files.path('current', 'tls.crt'),
    PLATFORM_NEXT_PRIVATE_KEY_PATH: files.path('next', 'tls.key'),
    PLATFORM_NEXT_CERTIFICATE_PATH: files.path('next', 'tls.crt'),
    PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS: '1000',
    PLATFORM_TOKEN_STORE_URL: `redis://127.0.0.1:${redis.port}`,
    PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PLATFORM_REFRESH_BEFORE_EXPIRY_SECONDS: String(Math.floor(LIFETIME_S / 3)),
    PLATFORM_EXCHANGE_TIMEOUT_MS: '2000',
    PLATFORM_RETRY_MAX_TOTAL_MS: '8000',
    PLATFORM_CORRECT_CLOCK_SKEW: 'true',
    SOAK_STORE_TIMING: JSON.stringify(STORE_TIMING),
  };
  const replicas = await Promise.all(Array.from({ length: REPLICAS }, (_, i) => Replica.spawn(env, i)));
  log(`${REPLICAS} replicas up, token lifetime ${LIFETIME_S} s, redis on ${redis.port}`);

  /** Stats of replica processes that were killed, collected just before. */
  const retired = [];
  const faults = [];
  const byDesign = [];
  let phase = 'warm-up';
  /** Token requests per phase: the platform's counters when each phase began. */
  const phaseCounters = [];
  const setPhase = async (name) => {
    phase = name;
    phaseCounters.push({ name, counters: { ...platform.counters.exchanges } });
    await Promise.all(replicas.map((replica) => replica.request('phase', { name }).catch(() => undefined)));
  };
  const record = (kind, detail, allowance) => {
    faults.push({ kind, phase, atS: Math.round((Date.now() - startedAt) / 100) / 10, detail, allowance });
    log(`fault: ${kind} (${detail})`);
  };
  const tokenFaultsUsed = () => platform.counters.exchanges.faulted;
  let injected = 0;
  const inject = (fault, count = 1) => {
    for (let i = 0; i < count; i += 1) platform.injectFault(fault);
    injected += count;
  };
  let rotations = 0;

  const schedule = [
    async () => {
      await setPhase('503-burst');
      inject({ kind: 'status', status: 503, body: { error: 'temporarily_unavailable' } }, 3);
      record('token-endpoint 503 burst', '3 answers of 503 to the next token requests', 1);
    },
    async () => {
      await setPhase('429-retry-after');
      inject({ kind: 'status', status: 429, headers: { 'retry-after': '1' }, body: { error: 'slow_down' } }, 2);
      record('token-endpoint 429 with Retry-After', '2 answers of 429, Retry-After: 1', 1);
    },
    async () => {
      await setPhase('timeout-and-drop');
      inject({ kind: 'hang' });
      inject({ kind: 'drop' });
      record('token-endpoint timeout and dropped connection', 'one request never answered, one connection reset', 1);
    },
    async () => {
      await setPhase('redis-frozen');
      redis.freeze();
      record('Redis frozen', `SIGSTOP for ${STEP_MS / 2000} s`, REPLICAS * 2);
      await sleep(STEP_MS / 2);
      redis.thaw();
    },
    async () => {
      await setPhase('redis-killed');
      await redis.kill();
      record('Redis killed and restarted', 'SIGKILL, restarted empty on the same port after 2 s', REPLICAS * 2);
      await sleep(2_000);
      await redis.launch();
    },
    async () => {
      await setPhase('clock-jump');
      const jump = 90_000;
      platform.setClockOffset(jump);
      record('platform clock jump', `+${jump / 1000} s, back to 0 half a step later`, REPLICAS * 2);
      await sleep(STEP_MS / 2);
      platform.setClockOffset(0);
    },
    async () => {
      await setPhase('replica-restart');
      const victim = replicas[0];
      retired.push(await victim.request('stats'));
      await victim.kill();
      record('replica killed and restarted', `replica 0, SIGKILL; a new process started at once`, 1);
      replicas[0] = await Replica.spawn(env, 0);
      await replicas[0].request('phase', { name: phase });
    },
    async () => {
      await setPhase('portal-cut-over');
      platform.replaceCertificate(integration.machineId, next.certificatePem);
      rotations += 1;
      record('portal cut-over to the next certificate', `rotation ${rotations}`, 1);
    },
    async () => {
      await setPhase('files-promoted');
      const promoted = next;
      next = await createTestCredentials();
      files.write('current', promoted);
      files.write('next', next);
      record('credential files swapped', 'current ← next, next ← a new pair, each by one rename', 0);
    },
  ];

  const cycles = [];
  const runUntil = MINUTES > 0 ? startedAt + MINUTES * 60_000 : 0;
  await setPhase('warm-up');
  await sleep(STEP_MS);
  let cycle = 0;
  do {
    cycle += 1;
    cycles.push({ cycle, startedAtS: Math.round((Date.now() - startedAt) / 1000) });
    for (const step of schedule) {
      await step();
      await sleep(STEP_MS);
    }
  } while (Date.now() < runUntil);

  // Settle: every replica must have the promoted pair and share a token again.
  await setPhase('settle');
  await sleep(STEP_MS);
  const beforeOutage = await Promise.all(replicas.map((replica) => replica.request('status')));
  const exchangesBeforeOutage = { ...platform.counters.exchanges };
  const tokenRequestsBeforeOutage = platform.journal.length;
  const elapsedBeforeOutageMs = Date.now() - startedAt;

  // A fault no module survives by design: the token endpoint down for longer than a token lives.
  await setPhase('by-design-outage');
  const outageMs = (LIFETIME_S + 5) * 1000;
  const outageStart = Date.now();
  let outageInjected = 0;
  const outageFaultsStart = tokenFaultsUsed();
  while (Date.now() - outageStart < outageMs) {
    // Keep two 503s queued: every token request meets one while the outage lasts.
    const pending = outageInjected - (tokenFaultsUsed() - outageFaultsStart);
    if (pending < 2) {
      inject({ kind: 'status', status: 503 }, 2 - pending);
      outageInjected += 2 - pending;
    }
    await sleep(50);
  }
  await setPhase('recovery');
  await sleep(STEP_MS);

  const results = await Promise.all(replicas.map((replica) => replica.request('stats')));
  const all = [...retired, ...results];
  const phases = {};
  for (const { stats } of all) {
    for (const [name, entry] of Object.entries(stats)) {
      const merged = (phases[name] ??= { calls: 0, failed: 0, latencies: [], failures: {} });
      merged.calls += entry.calls;
      merged.failed += entry.failed;
      merged.latencies.push(...entry.latencies);
      for (const [reason, count] of Object.entries(entry.failures)) {
        merged.failures[reason] = (merged.failures[reason] ?? 0) + count;
      }
    }
  }
  const tokenRequests = {};
  const final = { name: 'end', counters: { ...platform.counters.exchanges } };
  phaseCounters.forEach(({ name, counters }, i) => {
    const until = (phaseCounters[i + 1] ?? final).counters;
    const entry = (tokenRequests[name] ??= { accepted: 0, rejected: 0, faulted: 0 });
    for (const field of ['accepted', 'rejected', 'faulted']) entry[field] += until[field] - counters[field];
  });
  const phaseReport = Object.fromEntries(
    Object.entries(phases).map(([name, entry]) => [
      name,
      {
        calls: entry.calls,
        failed: entry.failed,
        failures: entry.failures,
        latencyMs: summarize(entry.latencies),
        tokenRequests: tokenRequests[name],
      },
    ]),
  );
  const designPhases = new Set(['by-design-outage', 'recovery']);
  const sum = (filter, field) =>
    Object.entries(phaseReport)
      .filter(([name]) => filter(name))
      .reduce((total, [, entry]) => total + entry[field], 0);
  const calls = sum((name) => !designPhases.has(name), 'calls');
  const failed = sum((name) => !designPhases.has(name), 'failed');
  const exchanges = exchangesBeforeOutage.accepted;
  const refused = exchangesBeforeOutage.rejected;
  // By cause: "not registered" (the cut-over: iss or signature) and the rest (the clock jump's first attempt).
  const refusedByRule = {};
  for (const entry of platform.journal.slice(0, tokenRequestsBeforeOutage)) {
    if (entry.verdict === 'rejected') refusedByRule[entry.rule] = (refusedByRule[entry.rule] ?? 0) + 1;
  }
  const refusedNotRegistered = (refusedByRule.iss ?? 0) + (refusedByRule.signature ?? 0);
  const lifetimes = Math.ceil(elapsedBeforeOutageMs / (LIFETIME_S * 1000));
  const allowance = faults.reduce((total, fault) => total + fault.allowance, 0);
  const unusedTokenFaults = injected - outageInjected - exchangesBeforeOutage.faulted;
  const byDesignCalls = sum((name) => designPhases.has(name), 'calls');
  const byDesignFailed = sum((name) => designPhases.has(name), 'failed');
  byDesign.push({
    fault: `token endpoint answering 503 for ${outageMs / 1000} s, longer than a token lives (${LIFETIME_S} s)`,
    calls: byDesignCalls,
    failed: byDesignFailed,
    note: 'calls fail once the cached token expires and until the endpoint answers again; the module recovers without a restart',
  });
  const switchWarnings = all.reduce((total, entry) => total + entry.switchWarnings, 0);
  const report = {
    quick: QUICK,
    replicas: REPLICAS,
    tokenLifetimeSeconds: LIFETIME_S,
    stepSeconds: STEP_MS / 1000,
    durationSeconds: Math.round((Date.now() - startedAt) / 1000),
    cycles: cycles.length,
    rotations,
    calls,
    failed,
    exchanges,
    lifetimes,
    faultEvents: faults.length,
    exchangeAllowance: allowance,
    exchangeBound: lifetimes + allowance,
    refused,
    refusedByRule,
    refusedNotRegistered,
    maxNotRegisteredAllowed: rotations * (REPLICAS + 1),
    tokenRequests: tokenRequestsBeforeOutage,
    tokenFaultsInjected: injected - outageInjected,
    tokenFaultsUnused: unusedTokenFaults,
    switchWarnings,
    replicasAtEnd: beforeOutage,
    targets: {
      noFailedCall: failed === 0,
      exchangesWithinBound: exchanges <= lifetimes + allowance,
      everyFaultApplied: unusedTokenFaults === 0 && faults.length === schedule.length * cycles.length,
      atMostOneRefusalPerReplicaPerRotation: refusedNotRegistered <= rotations * (REPLICAS + 1),
      fleetConverged: beforeOutage.every((s) => s.thumbprint === beforeOutage[0].thumbprint && !s.switched),
    },
    phases: phaseReport,
    faults,
    byDesign,
  };

  await Promise.all(replicas.map((replica) => replica.request('stop').catch(() => undefined)));
  await platform.close();
  await redis.kill();
  rmSync(work, { recursive: true, force: true });

  const json = JSON.stringify(report, null, 2);
  if (args.report) writeFileSync(args.report, `${json}\n`);
  else process.stdout.write(`${json}\n`);
  for (const entry of byDesign) {
    process.stdout.write(
      `soak (by design, not counted): ${entry.fault}: ${entry.calls} calls, ${entry.failed} failed\n`,
    );
  }
  process.stdout.write(
    `soak: ${calls} calls, ${failed} failed, ${exchanges} exchanges for ${lifetimes} token lifetimes, ${refused} refused\n`,
  );
  const ok = Object.values(report.targets).every(Boolean);
  process.exitCode = ok ? 0 : 1;
}

await main();
