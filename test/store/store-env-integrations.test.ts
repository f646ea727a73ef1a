import { randomBytes } from 'node:crypto';
import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  getTokenProviderToken,
  platformAuthConfig,
  type TokenProvider,
} from 'nestjs-platform-auth';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { useCleanup } from '../support/cleanup.js';
import { restoreEnv } from '../support/environment.js';
import { useRedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
const track = useCleanup();
const saved = { ...process.env };

afterEach(() => restoreEnv(saved));

/** One replica of the `billing` integration, configured from the environment as docs/shared-store.md shows. */
async function billingReplica(): Promise<TokenProvider> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ConfigModule.forRoot({ ignoreEnvFile: true }),
      PlatformAuthModule.forRootAsync({
        name: 'billing',
        ...platformAuthConfig.forIntegration('billing').asProvider(),
      }),
    ],
  }).compile();
  await moduleRef.init();
  track(moduleRef);
  return moduleRef.get<TokenProvider>(getTokenProviderToken('billing'));
}

describe('store variables without a name', () => {
  it('apply to a named integration that sets none of its own: its replicas share one exchange', async () => {
    const emulator = track(await PlatformEmulator.start());
    const billing = await emulator.createIntegration();
    Object.assign(process.env, {
      PLATFORM_BILLING_BASE_URL: billing.moduleOptions.baseUrl,
      PLATFORM_BILLING_MACHINE_ID: billing.machineId,
      PLATFORM_BILLING_PRIVATE_KEY: billing.privateKeyPem,
      PLATFORM_BILLING_CERTIFICATE: billing.certificatePem,
      PLATFORM_TOKEN_STORE_URL: redis().url,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    });
    const first = await billingReplica();
    const second = await billingReplica();
    expect(first.status().sharedStore?.state).toBe('shared');
    const token = await first.getAccessToken();
    expect(await second.getAccessToken()).toBe(token);
    expect(emulator.counters.exchanges.total).toBe(1);
  });

  it("do not mix into an integration's own store settings", async () => {
    Object.assign(process.env, {
      PLATFORM_BILLING_BASE_URL: 'https://platform.example.com',
      PLATFORM_BILLING_TOKEN_STORE_URL: redis().url,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    });
    await expect(billingReplica()).rejects.toThrow(/PLATFORM_BILLING_TOKEN_STORE_ENCRYPTION_KEY/);
  });
});
