// One application process of an outbox fleet, on the built package: the default integration, a tenant registry,
// and PlatformOutboxModule with its workers on (or off, to only enqueue). The parent drives it over IPC and hears of
// every job event; it may SIGKILL the process at any moment, which is the point. Used by test/outbox and the soak.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, TokenProvider } from '../../dist/index.js';
import { PlatformOutbox, PlatformOutboxModule } from '../../dist/outbox/index.js';

const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
let app;

const handlers = {
  /** `integration`: forRoot options of the default integration; `tenants`: tenant id → forRoot options. */
  start: async ({ integration, tenants = {}, outbox }) => {
    class ReplicaModule {}
    Module({
      imports: [
        PlatformAuthModule.forRoot({ ...integration, startupCheck: 'off' }),
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
  enqueue: async ({ messages }) => {
    const outbox = app.get(PlatformOutbox);
    const ids = [];
    for (const message of messages) {
      try {
        ids.push(await outbox.enqueue(message));
      } catch (error) {
        ids.push({ error: String(error?.message ?? error) });
      }
    }
    return ids;
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
