// One replica process of the tenant-isolation model: a `forTenants` registry and a per-tenant outbox on the built
// package and the shared store, driven by the parent over IPC. Every call reports what the caller saw: its status
// and, for a 2xx, the integration the platform's answer names (the owner of the token the request carried).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { firstValueFrom } from 'rxjs';
import { PlatformAuthModule, PlatformTenants } from '../../dist/index.js';
import { PlatformOutbox, PlatformOutboxModule } from '../../dist/outbox/index.js';

let app;
let tenants;
let outbox;
/** The resolver's table: the parent replaces it when a tenant is given a next pair, as an application's database. */
let table = {};

function failure(error) {
  return { ok: false, error: String(error?.name ?? 'Error'), status: error?.response?.status ?? error?.status };
}

async function call(tenant, client) {
  try {
    const scoped = await tenants.get(tenant);
    if (client === 'http') {
      const response = await firstValueFrom(scoped.http.get('/api/billing', { validateStatus: () => true }));
      return { ok: response.status === 200, status: response.status, owner: response.data?.machineId };
    }
    const response = await scoped.fetch.fetch('/api/billing');
    const body = await response.json().catch(() => ({}));
    return { ok: response.status === 200, status: response.status, owner: body.machineId };
  } catch (error) {
    return failure(error);
  }
}

const handlers = {
  start: async ({ table: given, tokenStore, outbox: outboxOptions }) => {
    table = given;
    class ReplicaModule {}
    Module({
      imports: [
        PlatformAuthModule.forTenants({
          resolve: (id) => Promise.resolve(Object.hasOwn(table, id) ? table[id] : undefined),
          tokenStore,
        }),
        PlatformOutboxModule.forRoot(outboxOptions),
      ],
    })(ReplicaModule);
    app = await NestFactory.createApplicationContext(ReplicaModule, { logger: false });
    tenants = app.get(PlatformTenants);
    outbox = app.get(PlatformOutbox);
  },
  update: ({ table: given }) => {
    table = given;
  },
  call: ({ tenant, client }) => call(tenant, client),
  token: async ({ tenant }) => {
    try {
      return await (await tenants.get(tenant)).tokens.getAccessToken();
    } catch {
      return null;
    }
  },
  evict: async ({ tenant }) => {
    await Promise.resolve(tenants.evict(tenant)).catch(() => undefined);
  },
  refresh: async ({ tenant }) => {
    await Promise.resolve(tenants.refresh(tenant)).catch(() => undefined);
  },
  enqueue: async ({ message }) => {
    try {
      return { id: await outbox.enqueue(message) };
    } catch (error) {
      return { error: `${String(error?.name ?? 'Error')}: ${String(error?.message ?? error)}` };
    }
  },
  /** True once no job of the queue waits, is delayed or is being sent, in any replica. */
  idle: async () => {
    const { waiting, delayed, active } = await outbox.status();
    return waiting + delayed + active === 0;
  },
  stop: async () => {
    await app?.close();
    app = undefined;
  },
};

process.on('message', async (message) => {
  const result = await handlers[message.command](message);
  process.send({ id: message.id, result: result ?? null });
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
