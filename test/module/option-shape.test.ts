import { Test } from '@nestjs/testing';
import { createClient } from 'redis';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, PlatformAuthModule, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { MOVED_OPTIONS } from '../../lib/options/options.moved.js';
import { PLATFORM_AUTH_OPTIONS } from '../../lib/options/options.table.js';
import { forgetCredentialText, ownAt, ownOptions, setAt } from '../../lib/options/own-options.util.js';
import { resolveUserAuthOptions } from '../../lib/user/user-options.resolver.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { httpUrlProblem } from '../../lib/options/url.rules.js';
import { RedisEntryStore } from '../../lib/store/token-store.redis.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { MemoryTokenStore } from '../support/memory-token-store.js';

let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials();
});

function base(): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    machineId: 'machine-1',
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
  };
}

async function problemsOf(options: PlatformAuthOptions): Promise<PlatformAuthConfigError> {
  try {
    await loadPlatformAuthConfig(options, Date.now());
  } catch (error) {
    if (error instanceof PlatformAuthConfigError) return error;
    throw error;
  }
  return expect.fail('expected a PlatformAuthConfigError');
}

/** `value` at `path` of a fresh object: the options a caller writes under one name. */
function at(path: string, value: unknown): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  setAt(options, path, value);
  return options;
}

describe('the option shape', () => {
  it('resolves key, exchange and tokenStore groups into the settings, with no warning', async () => {
    const store = { url: 'redis://127.0.0.1:6379', encryptionKey: randomBytes(32).toString('base64'), lockTtlMs: 7 };
    const config = await loadPlatformAuthConfig(
      {
        ...base(),
        exchange: { path: '/oauth/token', timeoutMs: 1_234, encoding: 'base64', retry: { maxAttempts: 2 } },
        tokenStore: { ...store, waitTimeoutMs: 9 },
      },
      Date.now(),
    );
    expect(config).toMatchObject({
      tokenUrl: 'https://platform.example.com/oauth/token',
      exchangeTimeoutMs: 1_234,
      tokenEncoding: 'base64',
      retry: { maxAttempts: 2, maxTotalMs: 30_000 },
    });
    expect(config.tokenStore).toMatchObject({ connection: { mode: 'standalone' }, timing: { lockTtlMs: 7 } });
    expect(config.credentials.thumbprint).toMatch(/^[0-9A-F]{40}$/);
    expect(config.warnings).toEqual([]);
  });

  it('reads a TokenStore given as tokenStore as { instance }, and builds a store on a Redis client of yours', async () => {
    const encryptionKey = randomBytes(32).toString('base64');
    const instance = new MemoryTokenStore(() => Date.now());
    const grouped = await loadPlatformAuthConfig({ ...base(), tokenStore: { instance, encryptionKey } }, Date.now());
    expect(grouped.tokenStore?.store).toBe(instance);
    const client = createClient({ url: 'redis://127.0.0.1:6379' });
    const onClient = await loadPlatformAuthConfig({ ...base(), tokenStore: { client, encryptionKey } }, Date.now());
    expect(onClient.tokenStore?.store).toBeInstanceOf(RedisEntryStore);
    expect(onClient.tokenStore?.connection).toBeUndefined();
    const both = await problemsOf({ ...base(), tokenStore: { client, instance, encryptionKey } });
    expect(both.problems.map((p) => `${p.setting}: ${p.message}`)).toEqual([
      'tokenStore.client: is set together with tokenStore.instance; pass one store',
    ]);
  });

  it('reads the top-level retry and idempotencyKey as the policy of calls, apart from exchange.retry', async () => {
    const config = await loadPlatformAuthConfig(
      {
        ...base(),
        retry: { maxAttempts: 5, budgetPercent: 20 },
        idempotencyKey: { methods: ['post', 'PATCH'] },
        exchange: { retry: { maxAttempts: 2 } },
      },
      Date.now(),
    );
    expect(config.callRetry).toEqual({
      maxAttempts: 5,
      baseDelayMs: 200,
      maxDelayMs: 30_000,
      budgetPercent: 20,
      budgetMinPerMinute: 10,
    });
    expect(config.idempotencyKey).toEqual({ header: 'idempotency-key', methods: new Set(['POST', 'PATCH']) });
    expect(config.retry.maxAttempts).toBe(2);
  });

  it('turns idempotency keys on with an empty group or true, and leaves them off without one or with false', async () => {
    for (const idempotencyKey of [{}, true])
      expect((await loadPlatformAuthConfig({ ...base(), idempotencyKey }, Date.now())).idempotencyKey).toEqual({
        header: 'idempotency-key',
        methods: new Set(['POST']),
      });
    // Off, the header is still where a caller's own key is found.
    for (const idempotencyKey of [undefined, false])
      expect((await loadPlatformAuthConfig({ ...base(), idempotencyKey }, Date.now())).idempotencyKey).toEqual({
        header: 'idempotency-key',
        methods: new Set(),
      });
  });

  it("refuses the exchange's retry.maxTotalMs at the top level, naming its place, and a bad key header", async () => {
    const error = await problemsOf({
      ...base(),
      retry: { maxAttempts: 0, maxTotalMs: 1_000 } as PlatformAuthOptions['retry'],
      idempotencyKey: { header: 'Authorization' },
    });
    expect(error.problems.map((p) => `${p.setting}: ${p.message}`)).toEqual([
      'retry.maxTotalMs: moved to exchange.retry.maxTotalMs',
      'retry.maxAttempts (PLATFORM_CALL_RETRY_MAX_ATTEMPTS): must be a number from 1 to 10',
      'idempotencyKey.header (PLATFORM_IDEMPOTENCY_KEY_HEADER): must be a header name (letters, digits and -), not Authorization',
    ]);
  });

  it('refuses a group that is not an object', async () => {
    const error = await problemsOf({ ...base(), exchange: 5 } as unknown as PlatformAuthOptions);
    expect(error.problems.map((p) => `${p.option}: ${p.message}`)).toEqual([
      'exchange: must be an object (its settings are the exchange.* options)',
    ]);
  });

  it('copies own properties only, in every group: an inherited key path is never read', () => {
    const key = Object.create({ privateKeyPath: '/etc/attacker.pem' }) as Record<string, unknown>;
    key.privateKey = 'pem';
    const owned = ownOptions({ key, exchange: Object.create({ path: '/elsewhere' }) });
    expect(ownAt(owned, 'key.privateKey')).toBe('pem');
    expect(ownAt(owned, 'key.privateKeyPath')).toBeUndefined();
    expect(ownAt(owned, 'exchange.path')).toBeUndefined();
  });

  it('forgets secrets and PEM text once start-up used them', () => {
    const owned = ownOptions({
      ...base(),
      next: { privateKeyPath: '/keys/next.pem', passphrase: 'next-pass' },
      tokenStore: { url: 'redis://u:p@127.0.0.1', encryptionKey: 'k', keyPrefix: 'p:' },
    });
    forgetCredentialText(owned);
    expect(JSON.parse(JSON.stringify(owned))).toEqual({
      baseUrl: 'https://platform.example.com',
      machineId: 'machine-1',
      key: {},
      next: { privateKeyPath: '/keys/next.pem' },
      tokenStore: { keyPrefix: 'p:' },
    });
  });
});

describe('an option name of an earlier shape', () => {
  const moved = Object.entries(MOVED_OPTIONS);

  it.each(moved)('%s is refused, naming %s', async (old, now) => {
    const error = await problemsOf({ ...base(), ...at(old, 'value') });
    expect(error.problems.filter((p) => p.option === old)).toEqual([
      { option: old, setting: old, message: `moved to ${now}` },
    ]);
  });

  it('names the place of every setting it moved, an option of the current shape', () => {
    for (const now of Object.values(MOVED_OPTIONS)) expect(PLATFORM_AUTH_OPTIONS).toHaveProperty([now]);
  });

  it('fails forRoot with every old name at once, before anything starts', async () => {
    const logger = new CapturingLogger();
    const failure = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          baseUrl: 'https://platform.example.com',
          machineId: 'machine-1',
          privateKey: credentials.privateKeyPem,
          certificate: credentials.certificatePem,
          tokenPath: '/oauth/token',
          logger,
        } as PlatformAuthOptions),
      ],
    })
      .compile()
      .then(
        () => expect.fail('start-up accepted an old option name'),
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(PlatformAuthConfigError);
    expect((failure as PlatformAuthConfigError).message).not.toContain('PRIVATE KEY-----');
    expect((failure as PlatformAuthConfigError).problems.map((p) => `${p.setting}: ${p.message}`)).toEqual(
      expect.arrayContaining([
        'privateKey: moved to key.privateKey',
        'certificate: moved to key.certificate',
        'tokenPath: moved to exchange.path',
      ]),
    );
  });

  it("is refused by user sign-in too, for the key's settings", async () => {
    const failure = await resolveUserAuthOptions(
      {
        baseUrl: 'https://platform.example.com',
        clientId: 'web',
        redirectUri: 'https://app.example.com/callback',
        stateSecret: randomBytes(32).toString('base64'),
        clientAuthentication: 'private_key_jwt',
        privateKeyPath: '/keys/client.pem',
        tokenPath: '/oauth/token',
      } as Parameters<typeof resolveUserAuthOptions>[0],
      Date.now(),
      {},
    ).then(
      () => expect.fail('start-up accepted an old option name'),
      (error: unknown) => error as PlatformAuthConfigError,
    );
    expect(failure.problems.map((p) => `${p.setting}: ${p.message}`)).toContain(
      'privateKeyPath: moved to key.privateKeyPath',
    );
    // User sign-in's own tokenPath is an option of its current shape, not the exchange's old name.
    expect(failure.problems.map((p) => p.option)).not.toContain('tokenPath');
  });
});

describe('the environment', () => {
  it('fills the current shape: every variable lands on its option', () => {
    for (const [name, row] of Object.entries(PLATFORM_AUTH_OPTIONS)) {
      if (!('env' in row)) continue;
      const options = readPlatformAuthEnv({ [row.env]: '1' });
      expect(ownAt(options, name), row.env).toBeDefined();
    }
    expect(
      readPlatformAuthEnv({
        PLATFORM_PRIVATE_KEY_PATH: '/keys/key.pem',
        PLATFORM_NEXT_CERTIFICATE_PATH: '/keys/next.cer',
        PLATFORM_EXCHANGE_TIMEOUT_MS: '500',
        PLATFORM_RETRY_MAX_TOTAL_MS: '900',
        PLATFORM_TOKEN_STORE_SENTINEL_NODES: 'a:26379,b:26379',
        PLATFORM_TOKEN_STORE_SENTINEL_MASTER: 'mymaster',
        PLATFORM_TOKEN_STORE_TLS_CA_PATH: '/ca.pem',
      }),
    ).toEqual({
      key: { privateKeyPath: '/keys/key.pem' },
      next: { certificatePath: '/keys/next.cer' },
      exchange: { timeoutMs: 500, retry: { maxTotalMs: 900 } },
      tokenStore: { sentinel: { nodes: ['a:26379', 'b:26379'], masterName: 'mymaster' }, tls: { caPath: '/ca.pem' } },
    });
  });
});

describe('the transport rule', () => {
  it.each([
    ['https://platform.example.com/cb', undefined],
    ['http://127.0.0.1:3000/cb', undefined],
    ['http://[::1]/cb', undefined],
    ['http://app.example.com/cb', /uses http: off loopback/],
    ['ftp://app.example.com/cb', /only https: is accepted/],
    ['/relative', /is not an absolute URL/],
  ])('%s', (url, problem) => {
    if (problem === undefined) expect(httpUrlProblem(url)).toBeUndefined();
    else expect(httpUrlProblem(url)).toMatch(problem);
  });
});
