import type { INestApplicationContext } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import axios, { type AxiosAdapter } from 'axios';
import { firstValueFrom } from 'rxjs';
import { request, type Dispatcher } from 'undici';
import { PlatformAuthInterceptor, PlatformFetch, TokenProvider } from 'nestjs-platform-auth';
import { startEchoServerInChild, type RunningServer } from '../support/echo-server.js';
import type { BenchPlatform } from '../support/platform.js';
import { formatNumber, progress, type Report } from '../support/report.js';
import { settledHeapUsed } from '../support/stats.js';

const LIMIT_MB = 5;
const MB = 1024 * 1024;

/** One of the library's clients, its requests answered in-process; `authorized` counts those that carried a token. */
interface MemoryClient {
  /** `undefined` for the interceptor: its figures keep the ids they have always had. */
  readonly id: string | undefined;
  readonly name: string;
  start(
    app: INestApplicationContext,
    counter: { authorized: number },
    echo: RunningServer,
  ): { send(): Promise<unknown>; stop(): void };
}

const JSON_BODY = Buffer.from('{}');

const CLIENTS: readonly MemoryClient[] = [
  {
    id: undefined,
    name: 'the interceptor',
    start(app, counter) {
      const instance = axios.create({ baseURL: platformUrl(app), adapter: answeringAdapter(counter) });
      const detach = app.get(PlatformAuthInterceptor).attach(instance);
      return { send: () => instance.get('/api/billing'), stop: detach };
    },
  },
  {
    id: 'http',
    name: 'module HttpService',
    start(app, counter) {
      const http = app.get(HttpService);
      const adapter = answeringAdapter(counter);
      return { send: () => firstValueFrom(http.get('/api/billing', { adapter })), stop: () => undefined };
    },
  },
  {
    id: 'platformFetch',
    name: 'PlatformFetch',
    start(app, counter) {
      // PlatformFetch sends with the global fetch: answered in-process for the run, put back after it. The token is
      // cached before the run (its lifetime is an hour), so no exchange needs the real one meanwhile.
      const realFetch = globalThis.fetch;
      globalThis.fetch = (_input, init) => {
        if (new Headers(init?.headers).has('authorization')) counter.authorized += 1;
        return Promise.resolve(new Response(JSON_BODY, { status: 200 }));
      };
      const platformFetch = app.get(PlatformFetch);
      return {
        send: () => platformFetch.fetch('/api/billing').then((response) => response.arrayBuffer()),
        stop: () => {
          globalThis.fetch = realFetch;
        },
      };
    },
  },
  {
    id: 'dispatcher',
    name: 'request + dispatcher',
    // No in-process answer here: a dispatcher of our own making that answers undici's request API held on to every
    // request (1.7 kB each, with or without the library), so these go to a loopback server in a child process.
    start(app, counter, echo) {
      const dispatcher = app.get(PlatformFetch).dispatcher as unknown as Dispatcher;
      const url = `${echo.url}/api/billing`;
      return {
        send: () =>
          request(url, { dispatcher }).then(async (response) => {
            if (response.headers['x-authorized'] === 'yes') counter.authorized += 1;
            await response.body.dump();
          }),
        stop: () => undefined,
      };
    },
  },
];

/**
 * Scenario 6. A million authenticated requests through each of the library's clients (the bare axios interceptor,
 * the module's HttpService, PlatformFetch, and undici's `request` with `PlatformFetch.dispatcher`), answered
 * in-process (an axios adapter, a global fetch) so the run measures the library's retention, not sockets', except
 * the dispatcher's, which go to a loopback server. Heap is read after forced
 * GC before each client's run and at each checkpoint; growth is the last reading minus the first.
 */
export async function measureMemory(
  platform: BenchPlatform,
  report: Report,
  sizes: { requests: number; checkpoints: number; inFlight: number },
): Promise<void> {
  const echo = await startEchoServerInChild({ reportAuthorization: true });
  try {
    for (const client of CLIENTS) await measureClient(client, platform, report, sizes, echo);
  } finally {
    await echo.close();
  }
}

async function measureClient(
  client: MemoryClient,
  platform: BenchPlatform,
  report: Report,
  sizes: { requests: number; checkpoints: number; inFlight: number },
  echo: RunningServer,
): Promise<void> {
  const app = await platform.createApp({ allowedOrigins: [echo.url] });
  const counter = { authorized: 0 };
  try {
    await app.get(TokenProvider).getAccessToken();
    const running = client.start(app, counter, echo);
    try {
      const send = async (count: number): Promise<void> => {
        let next = 0;
        const lane = async (): Promise<void> => {
          while (next < count) {
            next += 1;
            await running.send();
          }
        };
        await Promise.all(Array.from({ length: sizes.inFlight }, lane));
      };
      await send(20_000);
      counter.authorized = 0;

      const perCheckpoint = sizes.requests / sizes.checkpoints;
      const baseline = settledHeapUsed();
      const readings = [baseline];
      progress(
        `memory: ${formatNumber(sizes.requests)} requests through ${client.name}, heap after GC every ${formatNumber(perCheckpoint)}`,
      );
      const startedAt = performance.now();
      for (let i = 1; i <= sizes.checkpoints; i += 1) {
        await send(perCheckpoint);
        readings.push(settledHeapUsed());
        progress(
          `  ${formatNumber(i * perCheckpoint)} requests, heap ${((readings.at(-1)! - baseline) / MB).toFixed(2)} MB over the start`,
        );
      }
      const seconds = (performance.now() - startedAt) / 1000;
      const key = client.id === undefined ? 'memory' : `memory.${client.id}`;
      const label = client.id === undefined ? 'memory' : `memory, ${client.name}`;
      report.exactly(
        `${key}.authorized`,
        `${label}: requests that carried the token`,
        counter.authorized,
        sizes.requests,
        'client',
      );
      const growthMb = (readings.at(-1)! - baseline) / MB;
      report.below(
        `${key}.growth`,
        `${label}: heap growth after ${formatNumber(sizes.requests)} requests, after GC`,
        growthMb,
        LIMIT_MB,
        'MB',
        'heap after GC before the run',
      );
      report.detail(key, {
        baselineMb: round2(baseline / MB),
        growthMbAtCheckpoints: readings.slice(1).map((r) => round2((r - baseline) / MB)),
        requestsPerSecond: Math.round(sizes.requests / seconds),
      });
    } finally {
      running.stop();
    }
  } finally {
    await app.close();
  }
}

/** An axios adapter that answers 200 at once and counts the requests that carried a token. */
function answeringAdapter(counter: { authorized: number }): AxiosAdapter {
  return (config) => {
    if (config.headers.has('Authorization')) counter.authorized += 1;
    return Promise.resolve({ data: {}, status: 200, statusText: 'OK', headers: {}, config, request: {} });
  };
}

function platformUrl(app: INestApplicationContext): string {
  return app.get(HttpService).axiosRef.defaults.baseURL!;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
