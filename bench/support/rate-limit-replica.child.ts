import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, PlatformFetch, systemClock, type PlatformAuthOptions } from 'nestjs-platform-auth';

/**
 * One replica of the rate-limit measurement: one module on the real clock, sharing its limit with the others through
 * Redis, hammering the emulator's API from `inFlight` loops for `durationMs`, driven over IPC.
 *
 * `explicitGate`: the library's clients do not wait at the module's gate yet, so each loop waits at a gate built here
 * from the same options, the way the module builds its own (`createRateLimitGate` on the store's Redis). Once
 * `PlatformFetch` calls the gate itself, run with `explicitGate: false`: the module then gets `rateLimit` and the
 * loops call `PlatformFetch.fetch` alone.
 */
interface Setup {
  options: PlatformAuthOptions;
  rateLimit: NonNullable<PlatformAuthOptions['rateLimit']>;
  explicitGate: boolean;
}

interface Gate {
  acquire(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The internals the explicit gate is built from, found beside the package's entry point in `dist/`. */
async function explicitGate(options: PlatformAuthOptions, waits: number[]): Promise<Gate> {
  const entry = import.meta.resolve('nestjs-platform-auth');
  const load = (path: string) => import(new URL(path, entry).href) as Promise<Record<string, never>>;
  const [{ loadPlatformAuthConfig }, { TokenStoreHost }, { createRateLimitGate }] = await Promise.all([
    load('./platform-auth.configuration.js'),
    load('./store/token-store.host.js'),
    load('./calls/rate-limit/rate-limit.gate.js'),
  ]);
  const logger = { log: () => undefined, warn: (line: string) => console.warn(line) };
  const config = (await (loadPlatformAuthConfig as (o: unknown, now: number) => Promise<Record<string, unknown>>)(
    options,
    Date.now(),
  )) as { tokenStore: unknown; rateLimit: unknown };
  const Host = TokenStoreHost as unknown as new (input: unknown) => {
    scripts: unknown;
    connect(): Promise<void>;
    close(): Promise<void>;
  };
  const host = new Host({
    settings: config.tokenStore,
    identity: config,
    clock: systemClock,
    integration: 'default',
    logger,
    observer: { storeLock: () => undefined },
  });
  await host.connect();
  const gate = (createRateLimitGate as (input: unknown) => { acquire: Gate['acquire']; start(): void; close(): void })({
    settings: config.rateLimit,
    integration: 'default',
    clock: systemClock,
    shared: host.scripts,
    events: { waited: (ms: number) => waits.push(ms), modeChanged: () => undefined },
    logger,
  });
  gate.start();
  return {
    acquire: (signal) => gate.acquire(signal),
    close: async () => {
      gate.close();
      await host.close();
    },
  };
}

const setup = await new Promise<Setup>((resolve) => process.once('message', (message) => resolve(message as Setup)));
const waits: number[] = [];
const gate = setup.explicitGate
  ? await explicitGate({ ...setup.options, rateLimit: setup.rateLimit }, waits)
  : undefined;
const moduleOptions = setup.explicitGate ? setup.options : { ...setup.options, rateLimit: setup.rateLimit };
const app = await NestFactory.createApplicationContext(PlatformAuthModule.forRoot(moduleOptions), {
  logger: ['error', 'warn'],
});
const platformFetch = app.get(PlatformFetch);
const url = `${setup.options.baseUrl}/api/billing`;
// The token and a connection, before the clock starts: a request that waits for a token after its turn came would go
// late, and the requests late together would reach the platform closer than their turns were.
await (await platformFetch.fetch(`${setup.options.baseUrl}/api/unknown`)).arrayBuffer();

process.on('message', (message: { command: 'run'; durationMs: number; inFlight: number }) => {
  const deadline = performance.now() + message.durationMs;
  const counts = { sent: 0, ok: 0, throttled: 0, otherStatus: 0, failed: 0 };
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      try {
        await gate?.acquire();
        counts.sent += 1;
        const response = await platformFetch.fetch(url);
        await response.arrayBuffer();
        if (response.status === 200) counts.ok += 1;
        else if (response.status === 429) counts.throttled += 1;
        else counts.otherStatus += 1;
      } catch {
        counts.failed += 1;
      }
    }
  };
  void Promise.all(Array.from({ length: message.inFlight }, loop)).then(() => {
    const sorted = [...waits].sort((a, b) => a - b);
    process.send!({ ...counts, medianWaitMs: sorted[Math.floor(sorted.length / 2)] ?? 0 });
  });
});
process.on('disconnect', () => {
  void gate?.close();
  void app.close();
});
process.send!({ ready: true });
