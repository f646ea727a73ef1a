import { Test, type TestingModule } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformTenants, type PlatformAuthOptions } from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { keyInToken } from '../keys/keys-kit.js';
import { SoftHsm } from '../keys/softhsm.js';
import { emulatedTenant } from './tenants-kit.js';

const TOKEN = 'tenants';
let hsm: SoftHsm;
let hsmCertificate: string;
let certificates: TestCertificates;
const clock = new FakeClock(Date.now(), { autoAdvance: true });
let platform: PlatformEmulator;
let moduleRef: TestingModule | undefined;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  hsmCertificate = await keyInToken(hsm.uri(TOKEN, 'tenant-key'));
  certificates = await createTestCertificates(8, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegration({ certificatePem: hsmCertificate, machineId: 'machine-hsm' });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
});

afterAll(async () => {
  await moduleRef?.close();
  await platform?.close();
  hsm?.close();
});

function settings(tenantId: string): PlatformAuthOptions | undefined {
  if (tenantId === 'hsm') {
    return {
      baseUrl: platform.url,
      machineId: 'machine-hsm',
      key: { privateKeyUri: hsm.uri(TOKEN, 'tenant-key'), certificate: hsmCertificate },
    };
  }
  return emulatedTenant(platform.url, certificates, tenantId);
}

it('evicts a tenant whose key is in a PKCS#11 token and restores it, while other tenants call', async () => {
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forTenants({
        clock,
        logger: new CapturingLogger(),
        resolve: (tenantId) => Promise.resolve(settings(tenantId)),
      }),
    ],
  }).compile();
  const tenants = moduleRef.get(PlatformTenants);
  const billing = async (id: string) =>
    (await firstValueFrom((await tenants.get(id)).http.get<{ machineId: string }>('/api/billing'))).data.machineId;

  expect(await billing('hsm')).toBe('machine-hsm');
  const evicted = await tenants.get('hsm');
  const others = Array.from({ length: 8 }, (_, index) => billing(`t${index}`));
  expect(await tenants.evict('hsm')).toBe(true);
  // What the application still holds of the evicted tenant is stopped; its next get builds it again, key reopened.
  expect(evicted.tokens.status().state).toBe('shutdown');
  const [restored, ...answered] = await Promise.all([billing('hsm'), ...others]);
  expect(restored).toBe('machine-hsm');
  expect(answered).toEqual(Array.from({ length: 8 }, (_, index) => `machine-${index}`));
  expect(tenants.status()).toMatchObject({ resident: 9, evictions: 1, resolverFailures: 0 });
  expect(platform.counters.exchanges).toMatchObject({ accepted: 10, rejected: 0 });
});
