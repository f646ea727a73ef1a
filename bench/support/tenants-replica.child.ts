import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { firstValueFrom } from 'rxjs';
import { PlatformAuthModule, PlatformTenants, type PlatformTenantsOptions } from 'nestjs-platform-auth';
import { FakeClock } from 'nestjs-platform-auth/testing';
import type { TenantKeys } from './tenant-keys.js';
import { tenantSettings } from './tenant-keys.js';

/** One replica of a tenants fleet: a `forTenants` registry on a FakeClock the parent moves, driven over IPC. */
interface Setup {
  readonly startMs: number;
  readonly platformUrl: string;
  readonly keys: TenantKeys;
  readonly tokenStore: PlatformTenantsOptions['tokenStore'];
}

type Command =
  { readonly command: 'call'; readonly inFlight: number } | { readonly command: 'advance'; readonly ms: number };

const setting = new Promise<Setup>((resolve) => process.once('message', (message) => resolve(message as Setup)));
process.send!({ started: true });
const setup = await setting;
const clock = new FakeClock(setup.startMs);
const count = setup.keys.certificatePems.length;
const app = await NestFactory.createApplicationContext(
  PlatformAuthModule.forTenants({
    clock,
    maxResident: count,
    tokenStore: setup.tokenStore,
    resolve: (tenantId) => Promise.resolve(tenantSettings(setup.platformUrl, setup.keys, Number(tenantId.slice(1)))),
  }),
  { logger: ['error', 'warn'] },
);
const tenants = app.get(PlatformTenants);

/** Every tenant called once, `inFlight` at a time: the calls that did not come back as that tenant's, and why. */
async function callAll(inFlight: number): Promise<{ failed: number; errors: string[] }> {
  let next = 0;
  let failed = 0;
  const errors = new Set<string>();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      try {
        const tenant = await tenants.get(`t${index}`);
        const { data } = await firstValueFrom(tenant.http.get<{ machineId: string }>('/api/billing'));
        if (data.machineId !== `machine-${index}`) throw new Error('answered for another integration');
      } catch (error) {
        failed += 1;
        errors.add((error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { failed, errors: [...errors].slice(0, 5) };
}

process.on('message', (message: Command) => {
  if (message.command === 'advance') {
    clock.advance(message.ms);
    process.send!({ done: true });
    return;
  }
  void callAll(message.inFlight).then((result) => process.send!(result));
});
process.on('disconnect', () => void app.close());
process.send!({ ready: true });
