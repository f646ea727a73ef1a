import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { measureColdStampede } from './scenarios/cold-stampede.js';
import { measureEmulatorThroughput } from './scenarios/emulator-throughput.js';
import { measureFetchOverhead } from './scenarios/fetch-overhead.js';
import { measureHttpOverhead } from './scenarios/http-overhead.js';
import { measureKeyCustody } from './scenarios/key-custody.js';
import { measureMemory } from './scenarios/memory.js';
import { measureOutbox } from './scenarios/outbox.js';
import { measureRateLimit } from './scenarios/rate-limit.js';
import { measureSharedStore } from './scenarios/shared-store.js';
import { measureSigning } from './scenarios/signing.js';
import { measureTenantsFleet } from './scenarios/tenants-fleet.js';
import { measureTenants } from './scenarios/tenants.js';
import { measureTokenCache } from './scenarios/token-cache.js';
import { measureUnauthorizedStorm } from './scenarios/unauthorized-storm.js';
import { describeMachine } from './support/machine.js';
import { BenchPlatform } from './support/platform.js';
import { Report } from './support/report.js';
import { describeRevision } from './support/revision.js';
import { BLOCK_GC } from './support/stats.js';

/** `--quick` shrinks every size, to check that the bench itself works; its figures are not worth publishing. */
const quick = process.argv.includes('--quick');
/** `--only=memory,signing` runs the scenarios whose names contain one of those words (while investigating one). */
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const scale = (full: number, small: number): number => (quick ? small : full);

const sizes = {
  http: {
    sequentialRounds: scale(40, 4),
    requestsPerRound: scale(1_250, 400),
    concurrentRounds: scale(40, 4),
    perBlock: scale(500, 320),
    inFlight: 64,
  },
  fetch: {
    // A pair's draw has two clients a round: more rounds, and longer blocks to steady each block's median.
    pairs: {
      sequentialRounds: scale(40, 4),
      requestsPerRound: scale(1_000, 400),
      concurrentRounds: scale(80, 4),
      perBlock: scale(2_000, 320),
      inFlight: 64,
    },
    together: { sequentialRounds: scale(20, 4), requestsPerRound: scale(1_000, 400) },
  },
  tokenCache: { batches: scale(15, 5), callsPerBatch: scale(1_000_000, 100_000) },
  stampede: { rounds: scale(5, 2), callers: 10_000 },
  storm: { rounds: scale(3, 2), requests: 1_000, coldCalls: scale(10_000, 1_000) },
  signing: { rounds: scale(6, 2), blockMs: scale(750, 250), inFlight: 4 },
  keyCustody: { rounds: scale(6, 3), blockMs: scale(750, 250), inFlight: 4 },
  memory: { requests: scale(1_000_000, 100_000), checkpoints: 4, inFlight: 64 },
  emulator: { rounds: scale(8, 2), exchangesPerRound: scale(500, 100), inFlight: 16, crowd: scale(10_000, 1_000) },
  store: {
    fleets: quick ? [2, 4] : [2, 8, 32],
    waitRounds: scale(10, 2),
    cache: { batches: scale(15, 5), callsPerBatch: scale(1_000_000, 100_000) },
  },
  tenants: {
    tenants: scale(10_000, 1_000),
    maxResident: scale(1_000, 100),
    keys: scale(1_000, 100),
    inFlight: 8,
    warmRounds: scale(20, 4),
    requestsPerRound: scale(500, 200),
    coldRounds: scale(20, 4),
  },
  tenantsFleet: { replicas: 4, tenants: scale(1_000, 100), inFlight: 16 },
  outbox: { rounds: scale(15, 2), ladderRounds: scale(3, 1), messages: scale(500, 200), producers: 16 },
  rateLimit: { replicas: 3, requestsPerSecond: 50, durationMs: scale(20_000, 4_000), inFlight: 16, bursts: [50, 5] },
};

const machine = describeMachine();
const revision = describeRevision();
const startedAt = new Date();
const report = new Report();
const loadAtStart = loadavg()[0];
console.log(`nestjs-platform-auth bench${quick ? ' (--quick: sizes shrunk, figures not comparable)' : ''}`);
console.log(
  `${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.platform}, load ${loadAtStart.toFixed(2)}`,
);
console.log(`library at ${revision.commit}${revision.libModified ? ' with uncommitted changes in lib/' : ''}`);
if (BLOCK_GC === 'full')
  console.log('BENCH_BLOCK_GC=full: a full collection between measured blocks (not comparable with the default)');

const scenarios: [string, (platform: BenchPlatform) => Promise<void>][] = [
  ['HTTP overhead', (p) => measureHttpOverhead(p, report, sizes.http)],
  ['fetch overhead', (p) => measureFetchOverhead(p, report, sizes.fetch)],
  ['cached token', (p) => measureTokenCache(p, report, sizes.tokenCache)],
  ['cold stampede', (p) => measureColdStampede(p, report, sizes.stampede)],
  ['401 storm', (p) => measureUnauthorizedStorm(p, report, sizes.storm)],
  ['assertion signing', (p) => measureSigning(p, report, sizes.signing)],
  ['key custody signing', (p) => measureKeyCustody(p, report, sizes.keyCustody)],
  ['memory', (p) => measureMemory(p, report, sizes.memory)],
  ['emulator throughput', (p) => measureEmulatorThroughput(p, report, sizes.emulator)],
  ['shared store', (p) => measureSharedStore(p, report, sizes.store)],
  ['tenants', () => measureTenants(report, sizes.tenants)],
  ['tenants fleet', () => measureTenantsFleet(report, sizes.tenantsFleet)],
  ['rate limit', () => measureRateLimit(report, sizes.rateLimit)],
  ['outbox', () => measureOutbox(report, sizes.outbox)],
];

const selected = only ? scenarios.filter(([name]) => only.some((word) => name.includes(word))) : scenarios;
const platform = await BenchPlatform.start();
try {
  for (const [index, [name, run]] of selected.entries()) {
    const scenarioStart = performance.now();
    console.log(`[${index + 1}/${selected.length}] ${name}`);
    await run(platform);
    console.log(`    done in ${((performance.now() - scenarioStart) / 1000).toFixed(1)} s`);
  }
} catch (error) {
  console.error('bench aborted:', error);
  process.exitCode = 1;
} finally {
  await platform.close();
}

const durationSeconds = Math.round((Date.now() - startedAt.getTime()) / 1000);
report.detail('revision', revision);
report.detail('loadAverage1m', { atStart: loadAtStart, atEnd: loadavg()[0] });
report.detail('sizes', { quick, only, ...sizes });
report.detail('gcBetweenBlocks', BLOCK_GC);
console.log(`\n${report.toMarkdown()}\n`);

const resultsDir = new URL('../results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
// Only a complete full-size run may replace latest.json, which BENCHMARKS.md quotes.
const resultsFile = new URL(quick || only ? 'partial.json' : 'latest.json', resultsDir);
writeFileSync(resultsFile, report.toJson(machine, startedAt, durationSeconds));
console.log(`Figures written to ${resultsFile.pathname} (${durationSeconds} s in all).`);

for (const figure of report.misses)
  console.log(`MISSED: ${figure.label} = ${figure.display} (target ${figure.target})`);
if (report.failures.length > 0) {
  for (const figure of report.failures)
    console.error(`FAILED: ${figure.label} = ${figure.display} (must be ${figure.target.slice(2)})`);
  process.exitCode = 1;
} else if (process.exitCode !== 1) {
  console.log('Every count target holds.');
}
