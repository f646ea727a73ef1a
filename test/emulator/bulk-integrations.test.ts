import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type RegisteredIntegration,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { AssertionFactory, callApi, obtainAccessToken } from './emulator-test-kit.js';

const COUNT = 3_000;
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;
let integrations: RegisteredIntegration[];

beforeAll(async () => {
  certificates = await createTestCertificates(COUNT + 2, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  integrations = platform.registerIntegrations(
    certificates.certificatePems.slice(0, COUNT).map((certificatePem, index) => ({
      certificatePem,
      machineId: `tenant-${index}`,
    })),
  );
});

afterAll(() => platform.close());

describe('registerIntegrations', () => {
  it('makes certificates that are distinct, self-signed and valid now', () => {
    const parsed = [0, COUNT - 1].map((index) => new X509Certificate(certificates.certificatePems[index]));
    for (const certificate of parsed) expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(new Set(integrations.map((integration) => integration.thumbprint)).size).toBe(COUNT);
    expect(Date.parse(parsed[0].validFrom)).toBeLessThanOrEqual(clock.now());
  });

  it.each([0, COUNT / 2, COUNT - 1])(
    'authenticates integration %i of thousands by its own certificate',
    async (index) => {
      const integration = integrations[index];
      const assertions = new AssertionFactory(certificates.privateKeyPem, integration, platform.audience);
      const token = await obtainAccessToken(platform, assertions, clock.now());
      expect(platform.journal.at(-1)).toMatchObject({ verdict: 'accepted', machineId: `tenant-${index}` });
      expect((await callApi(platform, 'billing', { token })).status).toBe(200);
    },
  );

  it('registers all or none: a bad row names its index and leaves the registry as it was', () => {
    const [fresh, other] = certificates.certificatePems.slice(COUNT);
    expect(() =>
      platform.registerIntegrations([
        { certificatePem: fresh, machineId: 'fresh' },
        { certificatePem: other, machineId: 'tenant-7' },
      ]),
    ).toThrow("registerIntegrations[1]: machineId 'tenant-7' is already registered");
    expect(() =>
      platform.registerIntegrations([
        { certificatePem: fresh, machineId: 'a' },
        { certificatePem: fresh, machineId: 'b' },
      ]),
    ).toThrow(/^registerIntegrations\[1\]: a system integration with certificate thumbprint [0-9A-F]+ is already/);
    expect(() => platform.registerIntegrations([{ certificatePem: 'not a certificate' }])).toThrow(
      'registerIntegrations: certificatePem is not a PEM X.509 certificate',
    );
    // Neither batch left its first row behind: both can be registered now.
    const added = platform.registerIntegrations([
      { certificatePem: fresh, machineId: 'fresh' },
      { certificatePem: other, machineId: 'other' },
    ]);
    expect(added.map((integration) => integration.machineId)).toEqual(['fresh', 'other']);
  });
});
