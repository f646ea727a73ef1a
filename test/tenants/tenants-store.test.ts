import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformTenants, type PlatformTenantsOptions } from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useRedisServer } from '../support/redis-server.js';
import { emulatedTenant } from './tenants-kit.js';

const TENANTS = 50;
const redis = useRedisServer();
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;
let moduleRef: TestingModule | undefined;

beforeAll(async () => {
  certificates = await createTestCertificates(TENANTS + 1, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
});

afterEach(async () => {
  await moduleRef?.close();
  moduleRef = undefined;
});

afterAll(() => platform.close());

/** Connections to the server other than the one asking. */
async function connections(): Promise<number> {
  const list = String(await redis().command('CLIENT', 'LIST'));
  return list.split('\n').filter((line) => line.includes('cmd=') && !line.includes('cmd=client|list')).length;
}

const ids = Array.from({ length: TENANTS }, (_, index) => `t${index}`);

async function registry(options: Partial<PlatformTenantsOptions> = {}): Promise<PlatformTenants> {
  const prefix = `tenants-${randomBytes(4).toString('hex')}:`;
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forTenants({
        clock,
        logger: new CapturingLogger(),
        tokenStore: {
          url: redis().url,
          encryptionKey: randomBytes(32).toString('hex'),
          keyPrefix: prefix,
          // Generous: on a busy machine a slow round trip would degrade the store, which is not what is tested here.
          operationTimeoutMs: 5_000,
          lockTtlMs: 10_000,
          waitTimeoutMs: 20_000,
        },
        resolve: (tenantId) => Promise.resolve(emulatedTenant(platform.url, certificates, tenantId)),
        ...options,
      }),
    ],
  }).compile();
  await moduleRef.init();
  return moduleRef.get(PlatformTenants);
}

it('shares one Redis connection among every tenant of the registry', async () => {
  const before = await connections();
  const tenants = await registry();
  await (await tenants.get(ids[0])).tokens.getAccessToken();
  const forOne = (await connections()) - before;
  expect(forOne).toBeGreaterThan(0);
  for (const id of ids.slice(1)) await (await tenants.get(id)).tokens.getAccessToken();
  expect((await connections()) - before).toBe(forOne);
  const stores = await Promise.all(ids.map(async (id) => (await tenants.get(id)).tokens.status().sharedStore));
  expect(new Set(stores.map((store) => `${store?.state} ${store?.mode}`))).toEqual(new Set(['shared standalone']));
  await moduleRef!.close();
  moduleRef = undefined;
  expect(await connections()).toBe(before);
});

it('keeps the shared connection open while tenants are evicted, and stores every tenant through it', async () => {
  const before = await connections();
  const tenants = await registry({ maxResident: 5 });
  for (const id of ids) await (await tenants.get(id)).tokens.getAccessToken();
  expect(tenants.status()).toMatchObject({ resident: 5, evictions: TENANTS - 5 });
  const exchanged = platform.counters.exchanges.accepted;
  // The evicted first tenant comes back, and finds its token in the store rather than exchanging again.
  const again = await tenants.get(ids[0]);
  await again.tokens.getAccessToken();
  expect(again.tokens.status().sharedStore?.state).toBe('shared');
  expect(platform.counters.exchanges.accepted).toBe(exchanged);
  expect((await connections()) - before).toBeGreaterThan(0);
  expect((await connections()) - before).toBeLessThanOrEqual(2);
});
