// One application process with the outbox, on the built package: the default integration, named integrations, a
// tenant registry, and PlatformOutboxModule with its workers on (or off, to only enqueue). The parent drives it over
// IPC and hears of every job event; it may SIGKILL the process at any moment, which is the point. Used by test/outbox
// and by the outbox soak (soak/outbox.mjs).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, TokenProvider } from '../../dist/index.js';
import { PlatformOutbox, PlatformOutboxModule } from '../../dist/outbox/index.js';

const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
let app;

const handlers = {
  /**
   * `integration`: forRoot options of the default integration; `integrations`: name → forRoot options of a named
   * one; `tenants`: tenant id → forRoot options; `outbox`: PlatformOutboxModule options.
   */
  start: async ({ integration, integrations = {}, tenants = {}, outbox }) => {
    class ReplicaModule {}
    Module({
      imports: [
        PlatformAuthModule.forRoot({ ...integration, startupCheck: 'off' }),
        ...Object.entries(integrations).map(([name, options]) =>
          PlatformAuthModule.forRoot({ ...options, name, startupCheck: 'off' }),
        ),
        PlatformAuthModule.forTenants({ resolve: async (id) => tenants[id] }),
        PlatformOutboxModule.forRoot(outbox),
      ],
    })(ReplicaModule);
    app = await NestFactory.createApplicationContext(ReplicaModule, { logger: quiet });
    // A token before any send, so a holding proxy in front of the platform holds an API request, not an exchange.
    await app.get(TokenProvider).getAccessToken();
    const outboxService = app.get(PlatformOutbox);
    for (const event of ['queued', 'sent', 'retried', 'failed', 'dead-lettered']) {
      outboxService.on(event, (payload) => process.send?.({ event, payload }));
    }
  },
  // All at once: while Redis is down, each waits out its own enqueue timeout, not the sum of those before it.
  enqueue: async ({ messages }) => {
    const outbox = app.get(PlatformOutbox);
    return Promise.all(
      messages.map((message) => outbox.enqueue(message).catch((error) => ({ error: String(error?.message ?? error) }))),
    );
  },
  status: async () => app.get(PlatformOutbox).status(),
  stop: async () => {
    await app?.close();
    app = undefined;
  },
};

process.on('message', async (message) => {
  if (message.command === undefined) return;
  try {
    process.send({ id: message.id, result: await handlers[message.command](message) });
  } catch (error) {
    process.send({ id: message.id, error: String(error?.stack ?? error) });
  }
});
process.send({ ready: true });
