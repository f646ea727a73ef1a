// One replica process of a fleet test: several PlatformAuthModule instances (each its own token cache, as separate
// replicas would have) on the built package, driven by the parent over IPC. Time is a FakeClock the parent moves.
// The process outlives a fleet: `stop` closes its instances and `start` makes new ones for the next test.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, TokenProvider } from '../../dist/index.js';
// The clock alone, not the testing entry (the emulator and its helpers): a replica process starts for each fleet slot.
import { FakeClock } from '../../dist/testing/fake.clock.js';

const logs = [];
const capture = {
  log: (message) => logs.push({ level: 'log', message: String(message) }),
  warn: (message) => logs.push({ level: 'warn', message: String(message) }),
  error: (message) => logs.push({ level: 'error', message: String(message) }),
  debug: () => undefined,
  verbose: () => undefined,
};

let clock;
let apps = [];
let providers = [];

function outcome(settled) {
  if (settled.status === 'fulfilled') return { ok: true, token: settled.value };
  const { reason, status, code } = settled.reason ?? {};
  return { ok: false, reason, status, code, message: String(settled.reason?.message ?? settled.reason) };
}

const handlers = {
  start: async ({ startMs, instances, options }) => {
    logs.splice(0);
    clock = new FakeClock(startMs);
    for (let i = 0; i < instances; i += 1) {
      apps.push(
        await NestFactory.createApplicationContext(PlatformAuthModule.forRoot({ ...options, clock }), {
          logger: capture,
        }),
      );
    }
    providers = apps.map((app) => app.get(TokenProvider));
  },
  get: async () => (await Promise.allSettled(providers.map((p) => p.getAccessToken()))).map(outcome),
  peek: async () => providers.map((p) => p.peekAccessToken() ?? null),
  invalidate: async ({ token }) => providers.map((p) => p.invalidate(token)),
  advance: async ({ ms }) => clock.advance(ms),
  logs: async () => logs.splice(0),
  stop: async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    providers = [];
  },
};

process.on('message', async (message) => {
  const result = await handlers[message.command](message);
  process.send({ id: message.id, result });
});
// Idle between test files, this process outlives a worker only until the worker exits and the channel closes.
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
