// One replica process of the tenant-isolation model: a `forTenants` registry on the built package and the shared
// store, driven by the parent over IPC. Every call reports what the caller saw: its status and, for a 2xx, the
// integration the platform's answer names (the owner of the token the request carried).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { firstValueFrom } from 'rxjs';
import { PlatformAuthModule, PlatformTenants } from '../../dist/index.js';

let app;
let tenants;

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
  start: async ({ table, tokenStore }) => {
    app = await NestFactory.createApplicationContext(
      PlatformAuthModule.forTenants({
        resolve: (id) => Promise.resolve(Object.hasOwn(table, id) ? table[id] : undefined),
        tokenStore,
      }),
      { logger: false },
    );
    tenants = app.get(PlatformTenants);
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
