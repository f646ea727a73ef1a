import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformTenants, type PlatformTenantsOptions } from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { renderReachable } from '../support/reachable-rendering.js';
import { useRedisServer } from '../support/redis-server.js';
import { emulatedTenant } from './tenants-kit.js';

const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const redis = useRedisServer({ args: ['--requirepass', PASSWORD], password: PASSWORD });
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;
let moduleRef: TestingModule | undefined;

beforeAll(async () => {
  certificates = await createTestCertificates(2, { now: clock.now() });
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

function expectNone(rendering: string, secrets: readonly string[], where: string): void {
  for (const secret of secrets) expect(rendering.includes(secret), `${where} shows ${secret.slice(0, 6)}…`).toBe(false);
}

describe("forTenants' shared store password and encryption key", () => {
  it.each(['forTenants', 'forTenantsAsync'] as const)(
    'are not in the container, the options, status or a log line after a tenant was built (%s)',
    async (builder) => {
      const key = randomBytes(32);
      const logger = new CapturingLogger();
      const options: PlatformTenantsOptions = {
        clock,
        logger,
        resolve: (tenantId) => Promise.resolve(emulatedTenant(platform.url, certificates, tenantId)),
        tokenStore: {
          url: `redis://:${PASSWORD}@127.0.0.1:${redis().port}`,
          encryptionKey: key.toString('base64'),
          keyPrefix: `tenants-${randomBytes(4).toString('hex')}:`,
        },
      };
      moduleRef = await Test.createTestingModule({
        imports: [
          builder === 'forTenants'
            ? PlatformAuthModule.forTenants(options)
            : PlatformAuthModule.forTenantsAsync({ useFactory: () => options }),
        ],
      }).compile();
      const { tenants, secrets } = await expectSealedAfterUse(moduleRef, key);
      expectNone(JSON.stringify(tenants.status()), secrets, 'status()');
      expectNone(logger.lines.map((line) => line.message).join('\n'), secrets, 'the log');
      // The caller's own object is left as it was, for reuse.
      expect(options.tokenStore).toMatchObject({ url: expect.stringContaining(PASSWORD) as unknown });
    },
  );

  it('are sealed in a store group without a prototype, as a configuration loader builds it', async () => {
    const key = randomBytes(32);
    // Object.create(null): a bag of fields like a literal, which some configuration parsers hand back.
    const tokenStore = Object.assign(Object.create(null) as Record<string, unknown>, {
      url: `redis://:${PASSWORD}@127.0.0.1:${redis().port}`,
      encryptionKey: key.toString('base64'),
      keyPrefix: `tenants-${randomBytes(4).toString('hex')}:`,
    });
    const options = {
      clock,
      resolve: (tenantId: string) => Promise.resolve(emulatedTenant(platform.url, certificates, tenantId)),
      tokenStore,
    } as PlatformTenantsOptions;
    moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forTenants(options)] }).compile();
    await expectSealedAfterUse(moduleRef, key);
  });
});

/**
 * Starts the module, takes tenant `t1`'s token through the shared store, then finds neither the store's password
 * nor its encryption key in anything reachable from the module or the registry.
 */
async function expectSealedAfterUse(
  ref: TestingModule,
  key: Buffer,
): Promise<{ tenants: PlatformTenants; secrets: string[] }> {
  await ref.init();
  const tenants = ref.get(PlatformTenants);
  const tenant = await tenants.get('t1');
  await tenant.tokens.getAccessToken();
  expect(tenant.tokens.status().sharedStore?.state).toBe('shared');
  const secrets = [PASSWORD, key.toString('base64'), key.toString('hex')];
  expectNone(renderReachable(ref, 10), secrets, 'inspect(moduleRef)');
  expectNone(inspect(tenants, { depth: Infinity, showHidden: true }), secrets, 'inspect(PlatformTenants)');
  return { tenants, secrets };
}
