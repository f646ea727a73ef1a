// One replica of the calls soak: a Nest application context with the built package, a rate limit shared through
// Redis and idempotency keys on POST, calling the platform from several loops as fast as its turns allow, each loop
// alternating GET /api/billing and POST /api/messages, half of them through PlatformHttpService and half through
// PlatformFetch. It counts every call, the re-sends the policy made (its `call:retry` events) and, per call, which
// phases of the parent's fault schedule it overlapped; the parent names the phases over IPC.
import 'reflect-metadata';
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { NestFactory } from '@nestjs/core';
import { firstValueFrom } from 'rxjs';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  PlatformAuthModule,
  PlatformFetch,
  PlatformHttpService,
} from '../dist/index.js';

/** The call in progress on this async path: its re-sends land on it. */
const currentCall = new AsyncLocalStorage();
/** Epoch ms of every call's start and every re-send: the budget's windows are checked on them. */
const callTimes = [];
const resendTimes = [];
let budgetExhausted = 0;
/** When the rate limit left the shared bucket for this replica's share, or came back: `{ at, mode }`. */
const modeChanges = [];
subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, (event) => {
  if (event.event === 'call:retry-budget-exhausted') budgetExhausted += 1;
  if (event.event === 'rate_limit:mode') modeChanges.push({ at: Date.now(), mode: event.mode });
  if (event.event !== 'call:retry') return;
  resendTimes.push(Date.now());
  const call = currentCall.getStore();
  if (call) call.resends += 1;
});

/**
 * Epoch ms at which each API request left this process (node's http client for axios, undici for fetch): the
 * fleet's busiest second by the senders' clocks, which a stalled observer cannot bunch up.
 */
const sendTimes = [];
const sent = ({ request }) => {
  if (request.path.startsWith('/api/')) sendTimes.push(Date.now());
};
subscribe('http.client.request.start', sent);
subscribe('undici:request:create', sent);

/** The phases so far, in order; a call remembers the index it started and ended in. */
const phases = [{ name: 'start', byDesign: false }];

function failureOf(error) {
  if (error?.response?.status !== undefined) return `HTTP ${error.response.status}`;
  const code = error?.code ?? error?.cause?.code;
  return typeof code === 'string' && !code.startsWith('PLATFORM_AUTH') ? code : (error?.name ?? 'error');
}

/** This replica's longest event-loop stall once it runs: a turn used late, or a store answer read late, starts there. */
const stalls = monitorEventLoopDelay({ resolution: 5 });
stalls.enable();

const setup = await new Promise((resolve) => process.once('message', resolve));
const app = await NestFactory.createApplicationContext(PlatformAuthModule.forRoot(setup.options), {
  // Warnings too: a replica that leaves the shared rate limit says why.
  logger: ['error', 'warn'],
});
const http = app.get(PlatformHttpService);
const platformFetch = app.get(PlatformFetch);

/** One call; `undefined` when it succeeded, else what failed it. */
async function call(viaFetch, post, id) {
  const body = { id, text: `message ${id}` };
  try {
    if (viaFetch) {
      const init = post
        ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
        : {};
      const response = await platformFetch.fetch(post ? '/api/messages' : '/api/billing', init);
      await response.arrayBuffer();
      return response.ok ? undefined : `HTTP ${response.status}`;
    }
    await firstValueFrom(post ? http.post('/api/messages', body) : http.get('/api/billing'));
    return undefined;
  } catch (error) {
    return failureOf(error);
  }
}

/** Per phase a call ended in: calls and failures by reason; and the failed calls that overlapped no by-design phase. */
const stats = new Map();
const failedCalls = [];
let running = true;
async function loop(index) {
  for (let n = 0; running; n += 1) {
    const viaFetch = index % 2 === 1;
    const post = n % 2 === 1;
    const id = `${setup.replica}-${index}-${n}`;
    const started = phases.length - 1;
    const record = { resends: 0 };
    callTimes.push(Date.now());
    const failure = await currentCall.run(record, () => call(viaFetch, post, id));
    const ended = phases.length - 1;
    const entry = stats.get(ended) ?? { calls: 0, failed: 0, failures: {} };
    stats.set(ended, entry);
    entry.calls += 1;
    if (failure === undefined) continue;
    entry.failed += 1;
    entry.failures[failure] = (entry.failures[failure] ?? 0) + 1;
    const byDesign = phases.slice(started, ended + 1).some((phase) => phase.byDesign);
    if (!byDesign) {
      const client = viaFetch ? 'PlatformFetch' : 'PlatformHttpService';
      failedCalls.push({ id, client, method: post ? 'POST' : 'GET', failure, resends: record.resends, started });
    }
    // An application backs off after a failure; without it a call refused before it is sent would spin.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** How many of the ascending `times` are below `t`. */
function countBelow(times, t) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The budget's promise, checked at every re-send as it was taken: in the minute it looks at (the current 10 s slot of
 * the epoch clock and the 5 before), the re-sends already taken stay below `floor` + `percent` % of the calls made so
 * far. An overrun is a re-send taken past that bound. `worst` is the re-send that came closest to it.
 *
 * The policy counts a call when the client has built its request, a little after this loop started it (for axios,
 * after its request interceptors): a call started in the last `CALL_COUNT_LAG_MS` before the minute began may still
 * be in the policy's minute. Without that margin a call straddling a slot's start showed as an overrun of exactly one
 * re-send at the bound (3 of 906 re-sends in one run). The first overruns are listed with their time in the slot.
 */
const CALL_COUNT_LAG_MS = 100;
function budgetCheck({ percent, floor }) {
  const SLOT = 10_000;
  let overruns = 0;
  const overrunDetails = [];
  let worst = { ratio: 0 };
  resendTimes.forEach((t, i) => {
    const from = (Math.floor(t / SLOT) - 5) * SLOT;
    const calls = countBelow(callTimes, t + 1) - countBelow(callTimes, from - CALL_COUNT_LAG_MS);
    const before = i - countBelow(resendTimes, from);
    const bound = floor + (calls * percent) / 100;
    if (before >= bound) {
      overruns += 1;
      if (overrunDetails.length < 5) overrunDetails.push({ msIntoSlot: t % SLOT, before, bound });
    }
    const ratio = Math.round(((before + 1) / bound) * 1000) / 1000;
    if (ratio > worst.ratio) worst = { ratio, resends: before + 1, calls };
  });
  return { resends: resendTimes.length, overruns, overrunDetails, worst };
}

/** Re-sends between two epoch times (a phase's). */
function resendsBetween(from, to) {
  return resendTimes.filter((t) => t >= from && t < to).length;
}

const handlers = {
  run: ({ loops }) => {
    stalls.reset();
    workers = Array.from({ length: loops }, (_, i) => loop(i));
  },
  phase: ({ name, byDesign }) => {
    phases.push({ name, byDesign, at: Date.now() });
  },
  stats: ({ budget }) => ({
    phases: phases.map((phase, i) => ({
      ...phase,
      ...(stats.get(i) ?? { calls: 0, failed: 0, failures: {} }),
      resends: resendsBetween(phase.at ?? 0, phases[i + 1]?.at ?? Infinity),
    })),
    resends: resendTimes.length,
    sendTimes,
    longestStallMs: Math.round(stalls.max / 1e6),
    modeChanges,
    budgetExhausted,
    budget: budgetCheck(budget),
    failedCalls,
  }),
  stop: async () => {
    running = false;
    await Promise.all(workers);
    await app.close();
  },
};
let workers = [];

process.on('message', async (message) => {
  const result = await handlers[message.command](message);
  process.send({ id: message.id, result });
  if (message.command === 'stop') process.disconnect();
});
process.send({ ready: true });
