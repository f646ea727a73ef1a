import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider, platformAuthConfig, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useCleanup } from '../support/cleanup.js';
import { RedisServer } from '../support/redis-server.js';
import {
  expectOneExchangePerLifetime,
  useStoreFleets,
  startStorePlatform,
  storeReplica,
  storeOf,
} from '../support/store-fleet.js';
import { createTestCertificateAuthority, type TestCertificateAuthority } from '../support/test-ca.js';
import { restoreEnv } from '../support/environment.js';

const startStoreFleet = useStoreFleets();
const track = useCleanup();
let dir: string;
let ca: TestCertificateAuthority;
/** TLS with a certificate from a private CA; and the same with client certificates required (mutual TLS). */
let tls: RedisServer;
let mutual: RedisServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'platform-auth-tls-'));
  ca = await createTestCertificateAuthority(dir);
  const files = {
    caPath: ca.caPath,
    serverCertPath: ca.server.certPath,
    serverKeyPath: ca.server.keyPath,
    clientCertPath: ca.client.certPath,
    clientKeyPath: ca.client.keyPath,
  };
  [tls, mutual] = await Promise.all([
    RedisServer.start({ tls: files }),
    RedisServer.start({ tls: { ...files, mutual: true } }),
  ]);
});
afterAll(async () => {
  await Promise.all([tls?.stop(), mutual?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('Redis over TLS with a private CA', () => {
  it('a fleet of 3 processes trusting the CA makes 1 exchange cold and 1 per renewal', async () => {
    const setup = await startStorePlatform(track, { url: tls.url, tls: { caPath: ca.caPath } });
    const fleet = await startStoreFleet(track, setup, 3, 2);
    await expectOneExchangePerLifetime(fleet, setup.platform);
    expect((await fleet.logs()).filter((line) => line.level !== 'log')).toEqual([]);
  });

  it('without the CA: degraded, the warning names the TLS code, never the URL; calls still succeed', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, { url: tls.url });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(platform.counters.exchanges.total).toBe(1);
    const status = tokens.status().sharedStore!;
    expect(status).toMatchObject({ state: 'degraded', mode: 'standalone', problem: expect.any(String) });
    expect(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN']).toContain(status.problem);
    expect(logger.messages('warn')).toEqual([
      expect.stringMatching(new RegExp(`^Token store unavailable \\(${status.problem}\\); exchanging tokens locally`)),
    ]);
    expect(logger.messages('warn')[0]).not.toContain(String(tls.port));
  });
});

describe('Redis with mutual TLS', () => {
  it('a fleet presenting a client certificate makes 1 exchange cold and 1 per renewal', async () => {
    const setup = await startStorePlatform(track, {
      url: mutual.url,
      tls: { caPath: ca.caPath, certPath: ca.client.certPath, keyPath: ca.client.keyPath },
    });
    const fleet = await startStoreFleet(track, setup, 3, 2);
    await expectOneExchangePerLifetime(fleet, setup.platform);
  });

  it('without a client certificate: degraded, named by a TLS or connection code; calls still succeed', async () => {
    const { shared, clock } = await startStorePlatform(track, {
      url: mutual.url,
      tls: { caPath: ca.caPath },
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    const { state, problem } = tokens.status().sharedStore!;
    expect(state).toBe('degraded');
    expect(problem).toMatch(/^[A-Z][A-Z0-9_]+$|Error$/);
    expect(logger.messages('warn')).toEqual([expect.stringContaining(`Token store unavailable (${problem})`)]);
  });

  it('is configured by the environment alone (PLATFORM_TOKEN_STORE_URL and _TLS_*_PATH)', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, {});
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: shared.baseUrl,
      PLATFORM_MACHINE_ID: shared.machineId,
      PLATFORM_PRIVATE_KEY: shared.key!.privateKey,
      PLATFORM_CERTIFICATE: shared.key!.certificate,
      PLATFORM_TOKEN_STORE_URL: mutual.url,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: storeOf(shared).encryptionKey as string,
      PLATFORM_TOKEN_STORE_TLS_CA_PATH: ca.caPath,
      PLATFORM_TOKEN_STORE_TLS_CERT_PATH: ca.client.certPath,
      PLATFORM_TOKEN_STORE_TLS_KEY_PATH: ca.client.keyPath,
    });
    try {
      const replica = async () => {
        const logger = new CapturingLogger();
        const moduleRef = await Test.createTestingModule({
          imports: [
            ConfigModule.forRoot({ ignoreEnvFile: true }),
            PlatformAuthModule.forRootAsync({
              imports: [ConfigModule.forFeature(platformAuthConfig)],
              inject: [platformAuthConfig.KEY],
              useFactory: (config: PlatformAuthOptions) => ({ ...config, clock, logger }),
            }),
          ],
        }).compile();
        await moduleRef.init();
        track(moduleRef);
        return { tokens: moduleRef.get(TokenProvider), logger };
      };
      const [a, b] = [await replica(), await replica()];
      expect(await a.tokens.getAccessToken()).toBe(await b.tokens.getAccessToken());
      expect(platform.counters.exchanges.total).toBe(1);
      expect(a.tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'standalone' });
      expect([...a.logger.messages('warn'), ...b.logger.messages('warn')]).toEqual([]);
    } finally {
      restoreEnv(saved);
    }
  });
});
