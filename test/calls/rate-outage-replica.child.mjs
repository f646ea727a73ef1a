// One replica process of the rate-limit outage model: one module on the built package and the real clock, sharing
// its limit with the others through Redis, calling the emulator's API through `PlatformFetch` from `inFlight` loops
// as fast as its turns allow, driven by the parent over IPC. Each request carries its own id in `x-request`, and the
// replica notes when the gate let it go (the `rate_limit:turn` event, published in the request's own context).
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  PlatformAuthModule,
  PlatformFetch,
  TokenProvider,
} from '../../dist/index.js';

let app;
let running;
const request = new AsyncLocalStorage();
/** Request id → epoch ms at which its (last) turn came. */
const turns = new Map();
subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, (event) => {
  const id = request.getStore();
  if (event.event === 'rate_limit:turn' && id !== undefined) turns.set(id, Date.now());
});

const handlers = {
  start: async ({ options }) => {
    app = await NestFactory.createApplicationContext(PlatformAuthModule.forRoot(options), { logger: false });
    // The token before the calls: a request that waits for a token after its turn came would go late.
    await app.get(TokenProvider).getToken();
    return { started: true };
  },
  run: ({ inFlight, path }) => {
    const platformFetch = app.get(PlatformFetch);
    const counts = { ok: 0, otherStatus: 0, failed: 0, errors: [] };
    turns.clear();
    let sent = 0;
    let stopping = false;
    const loop = async () => {
      while (!stopping) {
        try {
          const id = `${process.pid}-${sent++}`;
          const headers = { 'x-request': id };
          const response = await request.run(id, () => platformFetch.fetch(path, { headers }));
          await response.arrayBuffer();
          if (response.status === 200) counts.ok += 1;
          else counts.otherStatus += 1;
        } catch (error) {
          counts.failed += 1;
          if (counts.errors.length < 5) counts.errors.push(String(error?.name ?? error));
        }
      }
    };
    const loops = Promise.all(Array.from({ length: inFlight }, loop));
    running = async () => {
      stopping = true;
      await loops;
      return { ...counts, turns: [...turns] };
    };
    return { running: true };
  },
  stop: () => running(),
  mode: () => app.get(TokenProvider).status().rateLimit?.mode,
  close: async () => {
    await app.close();
    app = undefined;
    return { closed: true };
  },
};

process.on('message', (message) => {
  Promise.resolve(handlers[message.command](message)).then(
    (result) => process.send({ id: message.id, result }),
    (error) => process.send({ id: message.id, result: { error: String(error?.stack ?? error) } }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
