// One replica of the soak's fleet: the built package configured from the environment alone (PLATFORM_*), as a
// deployed service is, with application traffic through PlatformHttpService to the emulator's placeholder API. It
// counts every call per fault phase (the parent names the phase over IPC) and answers the parent's questions.
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, PlatformHttpService, TokenProvider, platformAuthConfig } from '../dist/index.js';

const WORKERS = Number(process.env.SOAK_WORKERS ?? 2);
const PAUSE_MS = Number(process.env.SOAK_PAUSE_MS ?? 50);

const warnings = [];
const logger = {
  log: () => undefined,
  warn: (message) => warnings.push(String(message)),
  error: (message) => warnings.push(`error: ${String(message)}`),
  debug: () => undefined,
  verbose: () => undefined,
};

const config = platformAuthConfig();
const app = await NestFactory.createApplicationContext(
  PlatformAuthModule.forRoot({
    ...config,
    tokenStore: { ...config.tokenStore, ...JSON.parse(process.env.SOAK_STORE_TIMING ?? '{}') },
    logger,
  }),
  { logger },
);
const http = app.get(PlatformHttpService);
const tokens = app.get(TokenProvider);

let phase = 'start';
/** phase → { calls, failed, latencies, failures: { reason → count } } */
const stats = new Map();
function bucket(name) {
  let entry = stats.get(name);
  if (!entry) {
    entry = { calls: 0, failed: 0, latencies: [], failures: {} };
    stats.set(name, entry);
  }
  return entry;
}

let running = true;
async function worker() {
  while (running) {
    const started = performance.now();
    const at = phase;
    let failure;
    try {
      const response = await http.axiosRef.get('/api/billing', { timeout: 30_000 });
      if (response.status < 200 || response.status > 299) failure = `HTTP ${response.status}`;
    } catch (error) {
      failure = error?.response ? `HTTP ${error.response.status}` : (error?.code ?? error?.name ?? 'error');
    }
    const entry = bucket(at);
    entry.calls += 1;
    entry.latencies.push(performance.now() - started);
    if (failure) {
      entry.failed += 1;
      entry.failures[failure] = (entry.failures[failure] ?? 0) + 1;
    }
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  }
}
const workers = Array.from({ length: WORKERS }, () => worker());

const handlers = {
  phase: ({ name }) => {
    phase = name;
  },
  status: () => {
    const status = tokens.status();
    return {
      thumbprint: status.credentials.thumbprint,
      next: status.credentials.next?.thumbprint,
      switched: status.credentials.switched !== undefined,
      reload: status.credentials.reload.state,
      sharedStore: status.sharedStore?.state,
      state: status.state,
    };
  },
  stats: () => {
    const out = {};
    for (const [name, entry] of stats) out[name] = entry;
    return { stats: out, switchWarnings: warnings.filter((w) => w.includes('as not registered')).length, warnings };
  },
  stop: async () => {
    running = false;
    await Promise.all(workers);
    await app.close();
  },
};

process.on('message', async (message) => {
  const result = await handlers[message.command](message);
  process.send({ id: message.id, result });
  if (message.command === 'stop') process.disconnect();
});
process.send({ ready: true });
