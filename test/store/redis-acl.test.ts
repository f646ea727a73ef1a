import { randomBytes } from 'node:crypto';
import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider, platformAuthConfig, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useCleanup } from '../support/cleanup.js';
import { useRedisServer } from '../support/redis-server.js';
import {
  expectOneExchangePerLifetime,
  useStoreFleets,
  startStorePlatform,
  storeReplica,
  storeOf,
} from '../support/store-fleet.js';
import { restoreEnv } from '../support/environment.js';

const startStoreFleet = useStoreFleets();
const ADMIN_PASSWORD = randomBytes(12).toString('hex');
const STORE_PASSWORD = randomBytes(12).toString('hex');
const WEAK_PASSWORD = randomBytes(12).toString('hex');
/** The least privilege the store needs, as docs/shared-store.md documents it; and a user without EVAL. */
const redis = useRedisServer({
  args: [
    '--requirepass',
    ADMIN_PASSWORD,
    '--user',
    'platform-auth',
    'on',
    `>${STORE_PASSWORD}`,
    'resetkeys',
    '~platform-auth:*',
    'resetchannels',
    '-@all',
    '+get',
    '+set',
    '+del',
    '+eval',
    '--user',
    'no-eval',
    'on',
    `>${WEAK_PASSWORD}`,
    '~platform-auth:*',
    '-@all',
    '+get',
    '+set',
    '+del',
  ],
  password: ADMIN_PASSWORD,
});
const track = useCleanup();

/** The store's default key prefix, which the ACL user's key pattern covers; each test has its own integration. */
const DEFAULT_PREFIX = { keyPrefix: 'platform-auth:' };

describe('Redis with an ACL user of least privilege (+get +set +del +eval on platform-auth:*)', () => {
  it('a fleet of 3 processes with the user in the URL makes 1 exchange cold and 1 per renewal', async () => {
    const setup = await startStorePlatform(track, {
      ...DEFAULT_PREFIX,
      url: `redis://platform-auth:${STORE_PASSWORD}@127.0.0.1:${redis().port}`,
    });
    const fleet = await startStoreFleet(track, setup, 3, 2);
    await expectOneExchangePerLifetime(fleet, setup.platform);
    expect((await fleet.logs()).filter((line) => line.level !== 'log')).toEqual([]);
    const keys = (await redis().command('KEYS', '*')) as string[];
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((key) => key.startsWith('platform-auth:'))).toBe(true);
  });

  it('takes the user and password from PLATFORM_TOKEN_STORE_USERNAME / _PASSWORD (the environment alone)', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, {});
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: shared.baseUrl,
      PLATFORM_MACHINE_ID: shared.machineId,
      PLATFORM_PRIVATE_KEY: shared.key!.privateKey,
      PLATFORM_CERTIFICATE: shared.key!.certificate,
      PLATFORM_TOKEN_STORE_URL: redis().url,
      PLATFORM_TOKEN_STORE_USERNAME: 'platform-auth',
      PLATFORM_TOKEN_STORE_PASSWORD: STORE_PASSWORD,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: storeOf(shared).encryptionKey as string,
    });
    try {
      const replica = async () => {
        const moduleRef = await Test.createTestingModule({
          imports: [
            ConfigModule.forRoot({ ignoreEnvFile: true }),
            PlatformAuthModule.forRootAsync({
              imports: [ConfigModule.forFeature(platformAuthConfig)],
              inject: [platformAuthConfig.KEY],
              useFactory: (config: PlatformAuthOptions) => ({ ...config, clock, logger: new CapturingLogger() }),
            }),
          ],
        }).compile();
        await moduleRef.init();
        track(moduleRef);
        return moduleRef.get(TokenProvider);
      };
      const [a, b] = [await replica(), await replica()];
      expect(await a.getAccessToken()).toBe(await b.getAccessToken());
      expect(platform.counters.exchanges.total).toBe(1);
      expect(a.status().sharedStore).toEqual({ state: 'shared', mode: 'standalone' });
    } finally {
      restoreEnv(saved);
    }
  });

  it('a wrong password: degraded with WRONGPASS, never the password; calls still succeed', async () => {
    const wrong = `wrong-${randomBytes(6).toString('hex')}`;
    const { shared, clock } = await startStorePlatform(track, {
      ...DEFAULT_PREFIX,
      url: redis().url,
      username: 'platform-auth',
      password: wrong,
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'WRONGPASS' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(WRONGPASS\);/)]);
    expect(JSON.stringify([logger.lines, tokens.status()])).not.toContain(wrong);
  });

  it('a user without +eval: degraded with NOPERM; calls still succeed', async () => {
    const { shared, clock } = await startStorePlatform(track, {
      ...DEFAULT_PREFIX,
      url: `redis://no-eval:${WEAK_PASSWORD}@127.0.0.1:${redis().port}`,
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'NOPERM' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(NOPERM\);/)]);
    expect(logger.messages('warn')[0]).not.toContain(WEAK_PASSWORD);
  });
});
