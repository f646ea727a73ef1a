import { randomBytes } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformTenantConfigError,
  PlatformTenants,
  RateLimitWaitError,
  TokenProvider,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { FakeClock, createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { MemoryTokenStore } from '../support/memory-token-store.js';
import { useRedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials();
});
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

function options(extra: Partial<PlatformAuthOptions>): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example',
    machineId: 'machine',
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
    ...extra,
  };
}

async function problemsOf(run: () => Promise<unknown>): Promise<{ option: string; message: string }[]> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformAuthConfigError);
    return [...(error as PlatformAuthConfigError).problems];
  }
  throw new Error('no PlatformAuthConfigError');
}

describe('the rateLimit option', () => {
  it('reports every problem at once, each naming its setting', async () => {
    const problems = await problemsOf(() =>
      loadPlatformAuthConfig(options({ rateLimit: { requestsPerSecond: 0, burst: 2.5, maxWaitMs: -1 } }), Date.now()),
    );
    expect(problems.map((p) => p.option).sort()).toEqual([
      'rateLimit.burst',
      'rateLimit.maxWaitMs',
      'rateLimit.requestsPerSecond',
    ]);
    expect(problems.find((p) => p.option === 'rateLimit.requestsPerSecond')?.message).toContain('above 0');
  });

  it('requires requestsPerSecond, and refuses a burst above one second’s worth or a limit that is not a number', async () => {
    expect(
      await problemsOf(() => loadPlatformAuthConfig(options({ rateLimit: { burst: 3 } as never }), Date.now())),
    ).toEqual([
      expect.objectContaining({ option: 'rateLimit.requestsPerSecond', message: expect.stringContaining('required') }),
    ]);
    expect(
      await problemsOf(() =>
        loadPlatformAuthConfig(options({ rateLimit: { requestsPerSecond: 5, burst: 6 } }), Date.now()),
      ),
    ).toEqual([expect.objectContaining({ option: 'rateLimit.burst', message: expect.stringContaining('1 to 5') })]);
    expect(
      await problemsOf(() =>
        loadPlatformAuthConfig(options({ rateLimit: { requestsPerSecond: Infinity } }), Date.now()),
      ),
    ).toEqual([expect.objectContaining({ option: 'rateLimit.requestsPerSecond' })]);
  });

  it('refuses an empty rateLimit instead of ignoring it, wherever the options come in', async () => {
    const empty = options({ rateLimit: {} as never });
    const required = [
      expect.objectContaining({ option: 'rateLimit.requestsPerSecond', message: expect.stringContaining('required') }),
    ];
    expect(await problemsOf(() => loadPlatformAuthConfig(empty, Date.now()))).toEqual(required);
    for (const imported of [
      PlatformAuthModule.forRoot({ ...empty, logger: new CapturingLogger() }),
      PlatformAuthModule.forRootAsync({ useFactory: () => ({ ...empty, logger: new CapturingLogger() }) }),
    ]) {
      const compiling = Test.createTestingModule({ imports: [imported] }).compile();
      await expect(compiling).rejects.toBeInstanceOf(PlatformAuthConfigError);
      await expect(compiling).rejects.toThrow(/rateLimit\.requestsPerSecond/);
    }
  });

  it('refuses an empty rateLimit of a tenant added at run time', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forTenants({
          logger: new CapturingLogger(),
          resolve: () => Promise.resolve(options({ rateLimit: {} as never })),
        }),
      ],
    }).compile();
    await moduleRef.init();
    closing.push(() => moduleRef.close());
    const building = moduleRef.get(PlatformTenants).get('acme');
    await expect(building).rejects.toBeInstanceOf(PlatformTenantConfigError);
    await expect(building).rejects.toMatchObject({
      problems: [expect.objectContaining({ option: 'rateLimit.requestsPerSecond' })],
    });
  });

  it('takes its defaults: one second’s worth of burst, 10 s of waiting at most', async () => {
    const config = await loadPlatformAuthConfig(options({ rateLimit: { requestsPerSecond: 20 } }), Date.now());
    expect(config.rateLimit).toMatchObject({ maxWaitMs: 10_000, shape: { burst: 20, perWindow: 20, windowMs: 1_100 } });
  });

  it('reads the limit from the environment', () => {
    const env = readPlatformAuthEnv({ PLATFORM_RATE_LIMIT_REQUESTS_PER_SECOND: '0.5' });
    expect(env.rateLimit).toEqual({ requestsPerSecond: 0.5 });
  });

  it('says that a limit beside a TokenStore instance is kept per replica', async () => {
    const config = await loadPlatformAuthConfig(
      options({
        rateLimit: { requestsPerSecond: 5 },
        tokenStore: {
          instance: new MemoryTokenStore(() => Date.now()),
          encryptionKey: randomBytes(32).toString('base64'),
        },
      }),
      Date.now(),
    );
    expect(config.warnings).toEqual([
      expect.objectContaining({ option: 'rateLimit', message: expect.stringContaining('kept per replica') }),
    ]);
  });

  it('is a typed error that names the integration and the wait, and no secret', () => {
    const error = new RateLimitWaitError('billing', 12_345.4, 10_000);
    expect(error.toJSON()).toMatchObject({
      name: 'RateLimitWaitError',
      code: 'PLATFORM_AUTH_RATE_LIMIT_WAIT',
      integration: 'billing',
      waitMs: 12_345.4,
      maxWaitMs: 10_000,
    });
    expect(error.message).toContain('12346 ms');
  });
});

describe('the rate limit in status()', () => {
  async function statusOf(extra: Partial<PlatformAuthOptions>) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          ...options(extra),
          clock: new FakeClock(Date.now()),
          logger: new CapturingLogger(),
          // The platform of these options is not reachable: no token at boot, only the gate's status is read.
          startupCheck: 'off',
        }),
      ],
    }).compile();
    await moduleRef.init();
    closing.push(() => moduleRef.close());
    return moduleRef.get(TokenProvider);
  }

  it('is absent without a limit, local without a store', async () => {
    expect((await statusOf({})).status().rateLimit).toBeUndefined();
    expect((await statusOf({ rateLimit: { requestsPerSecond: 5 } })).status().rateLimit).toEqual({
      mode: 'local',
      requestsPerSecond: 5,
      waiting: 0,
    });
  });

  it('is shared by the replicas through the store’s Redis, which counts them', async () => {
    const tokenStore = {
      url: redis().url,
      encryptionKey: randomBytes(32).toString('base64'),
      keyPrefix: `rl-${randomBytes(4).toString('hex')}:`,
    };
    const first = await statusOf({ rateLimit: { requestsPerSecond: 5 }, tokenStore });
    const second = await statusOf({ rateLimit: { requestsPerSecond: 5 }, tokenStore });
    await expect.poll(() => second.status().rateLimit?.replicasSeen).toBe(2);
    expect(first.status().rateLimit).toMatchObject({ mode: 'shared', requestsPerSecond: 5 });
  });
});
