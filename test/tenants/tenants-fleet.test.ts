import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformTenants, type PlatformAuthOptions } from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useRedisServer } from '../support/redis-server.js';
import { emulatedTenant } from './tenants-kit.js';

const TENANTS = 40;
const REPLICAS = 4;
const redis = useRedisServer();
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;
const replicas: TestingModule[] = [];

beforeAll(async () => {
  certificates = await createTestCertificates(TENANTS, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
});

afterAll(async () => {
  for (const replica of replicas) await replica.close();
  await platform.close();
});

it('makes one exchange per tenant for a fleet of replicas sharing the store', async () => {
  const logger = new CapturingLogger();
  const shared: Partial<PlatformAuthOptions> = {
    clock,
    logger,
    tokenStore: {
      url: redis().url,
      encryptionKey: randomBytes(32).toString('hex'),
      keyPrefix: `tenants-${randomBytes(4).toString('hex')}:`,
      // Hang guards, not bounds under test: this is about sharing. With both cores starved (load 15-18) and bounds of
      // 2 s, every replica exchanged for itself (160 exchanges for 40 tenants), as a replica does when the store does
      // not answer within `operationTimeoutMs`; the warnings now say why if it happens again.
      operationTimeoutMs: 60_000,
      lockTtlMs: 120_000,
      waitTimeoutMs: 180_000,
    },
  };
  for (let replica = 0; replica < REPLICAS; replica += 1) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forTenants({
          ...shared,
          resolve: (tenantId) => Promise.resolve(emulatedTenant(platform.url, certificates, tenantId)),
        }),
      ],
    }).compile();
    replicas.push(moduleRef);
  }
  const ids = Array.from({ length: TENANTS }, (_, index) => `t${index}`);
  const tokens = await Promise.all(
    replicas.map((moduleRef) =>
      Promise.all(ids.map(async (id) => (await moduleRef.get(PlatformTenants).get(id)).tokens.getAccessToken())),
    ),
  );
  expect(platform.counters.exchanges, `warnings: ${logger.messages('warn').join(' | ')}`).toMatchObject({
    accepted: TENANTS,
    rejected: 0,
    faulted: 0,
  });
  // Every replica holds the one token of each tenant, and no two tenants share one.
  for (const replicaTokens of tokens) expect(replicaTokens).toEqual(tokens[0]);
  expect(new Set(tokens[0]).size).toBe(TENANTS);
});
