import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, RedisTokenStore, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { resolvePlatformAuthOptions } from '../../lib/platform-auth.configuration.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { reveal } from '../../lib/util/secret.util.js';

let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials();
});

function resolve(options: Partial<PlatformAuthOptions>) {
  return resolvePlatformAuthOptions(
    {
      baseUrl: 'https://platform.example',
      machineId: 'machine',
      privateKey: credentials.privateKeyPem,
      certificate: credentials.certificatePem,
      ...options,
    },
    Date.now(),
  );
}

function problemsOf(options: Partial<PlatformAuthOptions>): PlatformAuthConfigError {
  try {
    resolve(options);
  } catch (error) {
    if (error instanceof PlatformAuthConfigError) return error;
    throw error;
  }
  throw new Error('expected a PlatformAuthConfigError');
}

const URL_WITH_PASSWORD = 'rediss://app:s3cret-pass@redis.internal:6380/0';

describe('token store configuration', () => {
  it('warns about redis:// with a password to a host off loopback, never quoting the URL', () => {
    const key = randomBytes(32).toString('base64');
    const warnings = resolve({
      tokenStoreUrl: 'redis://app:s3cret-pass@redis.internal:6379',
      tokenStoreEncryptionKey: key,
    }).warnings;
    expect(warnings.map((w) => w.option)).toEqual(['tokenStoreUrl']);
    expect(JSON.stringify(warnings)).not.toContain('s3cret-pass');
    for (const url of [URL_WITH_PASSWORD, 'redis://app:s3cret-pass@127.0.0.1:6379', 'redis://redis.internal:6379']) {
      expect(resolve({ tokenStoreUrl: url, tokenStoreEncryptionKey: key }).warnings).toEqual([]);
    }
  });

  it('without a store resolves no store at all (behaviour as before)', () => {
    expect(resolve({}).tokenStore).toBeUndefined();
  });

  it('reads PLATFORM_TOKEN_STORE_URL and PLATFORM_TOKEN_STORE_ENCRYPTION_KEY (base64, hex, or a rotation list)', () => {
    const current = randomBytes(32).toString('base64');
    const previous = randomBytes(32).toString('hex');
    const fromEnv = readPlatformAuthEnv({
      PLATFORM_TOKEN_STORE_URL: URL_WITH_PASSWORD,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: `${current}, ${previous}`,
    });
    expect(fromEnv).toMatchObject({ tokenStoreUrl: URL_WITH_PASSWORD });
    const store = resolve(fromEnv).tokenStore!;
    expect(store.connection).toMatchObject({
      mode: 'standalone',
      nodes: [{ host: 'redis.internal', port: 6380 }],
      database: 0,
      username: 'app',
      tls: {},
    });
    expect(reveal(store.connection!.password!)).toBe('s3cret-pass');
    expect(store.keys.map(({ key }) => key.export().toString('hex'))).toEqual([
      Buffer.from(current, 'base64').toString('hex'),
      previous,
    ]);
    expect(new Set(store.keys.map((key) => key.kid)).size).toBe(2);
  });

  it("reads a named integration's own variables (PLATFORM_<NAME>_TOKEN_STORE_*)", () => {
    const fromEnv = readPlatformAuthEnv(
      {
        PLATFORM_TOKEN_STORE_URL: 'redis://default-store:6379',
        PLATFORM_BILLING_TOKEN_STORE_URL: 'redis://billing-store:6379',
        PLATFORM_BILLING_TOKEN_STORE_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      },
      'billing',
    );
    expect(fromEnv.tokenStoreUrl).toBe('redis://billing-store:6379');
    expect(fromEnv.tokenStoreEncryptionKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a URL without a key, naming the variable', () => {
    const error = problemsOf({ tokenStoreUrl: 'redis://127.0.0.1:6379' });
    expect(error.problems).toEqual([
      expect.objectContaining({
        setting: 'tokenStoreEncryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)',
        message: 'is required with a token store',
      }),
    ]);
  });

  it.each([
    ['16 bytes', randomBytes(16).toString('base64'), /decodes to 16 bytes; it must be 32 random bytes/],
    ['33 bytes of hex', randomBytes(33).toString('hex'), /decodes to 33 bytes/],
    ['a passphrase', 'correct horse battery staple!', /is not base64 or hex/],
    [
      'a good key then a short one',
      `${randomBytes(32).toString('hex')},${randomBytes(8).toString('hex')}`,
      /^entry 2 /,
    ],
  ])('refuses a key that is %s, never echoing it', (_, key, message) => {
    const error = problemsOf({ tokenStoreUrl: 'redis://127.0.0.1:6379', tokenStoreEncryptionKey: key });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0].setting).toBe('tokenStoreEncryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)');
    expect(error.problems[0].message).toMatch(message);
    for (const part of key.split(',')) {
      expect(error.message).not.toContain(part);
      expect(JSON.stringify(error)).not.toContain(part);
      expect(inspect(error)).not.toContain(part);
    }
  });

  it('refuses a URL that is not redis:// or rediss:// without quoting it (it may hold a password)', () => {
    const url = 'https://app:s3cret-pass@redis.internal:6380';
    const error = problemsOf({ tokenStoreUrl: url, tokenStoreEncryptionKey: randomBytes(32).toString('base64') });
    expect(error.problems).toEqual([
      expect.objectContaining({
        setting: 'tokenStoreUrl (PLATFORM_TOKEN_STORE_URL)',
        message: 'must be a redis:// or rediss:// URL with a host; the value is not shown',
      }),
    ]);
    expect(JSON.stringify(error)).not.toContain('s3cret-pass');
  });

  it('refuses both a store and a URL, an object that is not a TokenStore, and timings that are not positive', () => {
    const key = randomBytes(32).toString('base64');
    const both = problemsOf({
      tokenStore: new RedisTokenStore({ url: 'redis://127.0.0.1:6379' }),
      tokenStoreUrl: 'redis://127.0.0.1:6379',
      tokenStoreEncryptionKey: key,
    });
    expect(both.problems.map((p) => p.setting)).toEqual(['tokenStoreUrl (PLATFORM_TOKEN_STORE_URL)']);
    expect(both.problems[0].message).toMatch(/^is set together with tokenStore; .*not both/);
    const notAStore = problemsOf({ tokenStore: {} as never, tokenStoreEncryptionKey: key });
    expect(notAStore.problems[0].message).toMatch(/must implement TokenStore/);
    const timing = problemsOf({
      tokenStoreUrl: 'redis://127.0.0.1:6379',
      tokenStoreEncryptionKey: key,
      tokenStoreTiming: { lockTtlMs: 0, waitTimeoutMs: Number.NaN },
    });
    expect(timing.problems.map((p) => p.option)).toEqual([
      'tokenStoreTiming.lockTtlMs',
      'tokenStoreTiming.waitTimeoutMs',
    ]);
  });

  it('warns about a key with no store, and about a wait that cannot outlast the lock', () => {
    expect(resolve({ tokenStoreEncryptionKey: randomBytes(32).toString('base64') }).warnings).toEqual([
      expect.objectContaining({
        option: 'tokenStoreEncryptionKey',
        message: 'is set, but no token store is configured',
      }),
    ]);
    const short = resolve({
      tokenStoreUrl: 'redis://127.0.0.1:6379',
      tokenStoreEncryptionKey: randomBytes(32).toString('base64'),
      tokenStoreTiming: { lockTtlMs: 5_000, waitTimeoutMs: 5_000 },
    });
    expect(short.warnings.map((w) => w.option)).toEqual(['tokenStoreTiming.waitTimeoutMs']);
  });
});
