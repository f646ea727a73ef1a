import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { createClient, createClientPool, createCluster, createSentinel } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, type PlatformAuthOptions } from 'nestjs-platform-auth';
import type { TokenStoreOptions } from '../../lib/options/token-store-options.interface.js';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { reveal } from '../../lib/util/secret.util.js';
import { RedisEntryStore } from '../../lib/store/token-store.redis.js';
import { MemoryTokenStore } from '../support/memory-token-store.js';

let credentials: TestCredentials;
let dir: string;
beforeAll(async () => {
  credentials = await createTestCredentials();
  dir = mkdtempSync(join(tmpdir(), 'platform-auth-store-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const __filename = fileURLToPath(import.meta.url);

async function resolve(options: Partial<PlatformAuthOptions>) {
  return await loadPlatformAuthConfig(
    {
      baseUrl: 'https://platform.example',
      machineId: 'machine',
      key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
      ...options,
    },
    Date.now(),
  );
}

/** The configuration with `tokenStore` set to `store`. */
async function withStore(store: TokenStoreOptions) {
  return resolve({ tokenStore: store });
}

async function problemsOf(store: TokenStoreOptions): Promise<PlatformAuthConfigError> {
  try {
    await withStore(store);
  } catch (error) {
    if (error instanceof PlatformAuthConfigError) return error;
    throw error;
  }
  throw new Error('expected a PlatformAuthConfigError');
}

const URL_WITH_PASSWORD = 'rediss://app:s3cret-pass@redis.internal:6380/0';

describe('token store configuration', () => {
  it('warns about redis:// with a password to a host off loopback, never quoting the URL', async () => {
    const key = randomBytes(32).toString('base64');
    const warnings = (await withStore({ url: 'redis://app:s3cret-pass@redis.internal:6379', encryptionKey: key }))
      .warnings;
    expect(warnings.map((w) => w.setting)).toEqual(['tokenStore.url (PLATFORM_TOKEN_STORE_URL)']);
    expect(JSON.stringify(warnings)).not.toContain('s3cret-pass');
    for (const url of [URL_WITH_PASSWORD, 'redis://app:s3cret-pass@127.0.0.1:6379', 'redis://redis.internal:6379']) {
      expect((await withStore({ url, encryptionKey: key })).warnings).toEqual([]);
    }
  });

  it('without a store resolves no store at all (behaviour as before)', async () => {
    expect((await resolve({})).tokenStore).toBeUndefined();
  });

  it('reads PLATFORM_TOKEN_STORE_URL and PLATFORM_TOKEN_STORE_ENCRYPTION_KEY (base64, hex, or a rotation list)', async () => {
    const current = randomBytes(32).toString('base64');
    const previous = randomBytes(32).toString('hex');
    const fromEnv = readPlatformAuthEnv({
      PLATFORM_TOKEN_STORE_URL: URL_WITH_PASSWORD,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: `${current}, ${previous}`,
    });
    expect(fromEnv).toMatchObject({ tokenStore: { url: URL_WITH_PASSWORD } });
    const store = (await resolve(fromEnv)).tokenStore!;
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
    expect(fromEnv.tokenStore).toEqual({
      url: 'redis://billing-store:6379',
      encryptionKey: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it('refuses a URL without a key, naming the variable', async () => {
    const error = await problemsOf({ url: 'redis://127.0.0.1:6379' });
    expect(error.problems).toEqual([
      expect.objectContaining({
        setting: 'tokenStore.encryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)',
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
  ])('refuses a key that is %s, never echoing it', async (_, key, message) => {
    const error = await problemsOf({ url: 'redis://127.0.0.1:6379', encryptionKey: key });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0].setting).toBe('tokenStore.encryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)');
    expect(error.problems[0].message).toMatch(message);
    for (const part of key.split(',')) {
      expect(error.message).not.toContain(part);
      expect(JSON.stringify(error)).not.toContain(part);
      expect(inspect(error)).not.toContain(part);
    }
  });

  it('refuses a URL that is not redis:// or rediss:// without quoting it (it may hold a password)', async () => {
    const url = 'https://app:s3cret-pass@redis.internal:6380';
    const error = await problemsOf({ url, encryptionKey: randomBytes(32).toString('base64') });
    expect(error.problems).toEqual([
      expect.objectContaining({
        setting: 'tokenStore.url (PLATFORM_TOKEN_STORE_URL)',
        message: 'must be a redis:// or rediss:// URL with a host; the value is not shown',
      }),
    ]);
    expect(JSON.stringify(error)).not.toContain('s3cret-pass');
  });

  it('refuses both a store and a URL, an object that is not a TokenStore, and timings that are not positive', async () => {
    const key = randomBytes(32).toString('base64');
    const both = await problemsOf({
      instance: new MemoryTokenStore(() => Date.now()),
      url: 'redis://127.0.0.1:6379',
      encryptionKey: key,
    });
    expect(both.problems.map((p) => p.setting)).toEqual(['tokenStore.url (PLATFORM_TOKEN_STORE_URL)']);
    expect(both.problems[0].message).toMatch(/^is set together with tokenStore.instance; .*not both/);
    const notAStore = await problemsOf({ instance: {} as never, encryptionKey: key });
    expect(notAStore.problems[0].message).toMatch(/must implement TokenStore/);
    const timing = await problemsOf({
      url: 'redis://127.0.0.1:6379',
      encryptionKey: key,
      lockTtlMs: 0,
      waitTimeoutMs: Number.NaN,
    });
    expect(timing.problems.map((p) => p.setting)).toEqual(['tokenStore.lockTtlMs', 'tokenStore.waitTimeoutMs']);
  });

  it('warns about a key with no store, and about a wait that cannot outlast the lock', async () => {
    expect((await withStore({ encryptionKey: randomBytes(32).toString('base64') })).warnings).toEqual([
      expect.objectContaining({
        setting: 'tokenStore.encryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)',
        message: 'is set, but no token store is configured',
      }),
    ]);
    const short = await withStore({
      url: 'redis://127.0.0.1:6379',
      encryptionKey: randomBytes(32).toString('base64'),
      lockTtlMs: 5_000,
      waitTimeoutMs: 5_000,
    });
    expect(short.warnings.map((w) => w.setting)).toEqual(['tokenStore.waitTimeoutMs']);
  });
});

describe('Redis modes, credentials and TLS files', () => {
  const key = () => randomBytes(32).toString('base64');
  const settings = async (store: TokenStoreOptions) =>
    (await withStore({ encryptionKey: key(), ...store })).tokenStore!.connection!;

  it('reads every mode and its settings from the environment alone', async () => {
    const env = readPlatformAuthEnv({
      PLATFORM_TOKEN_STORE_CLUSTER_NODES: 'rediss://10.0.0.1:6379, rediss://10.0.0.2:6379',
      PLATFORM_TOKEN_STORE_USERNAME: 'platform-auth',
      PLATFORM_TOKEN_STORE_PASSWORD: 'cluster-pass',
      PLATFORM_TOKEN_STORE_TLS_CA_PATH: __filename,
    });
    expect(env).toMatchObject({
      tokenStore: {
        clusterNodes: ['rediss://10.0.0.1:6379', 'rediss://10.0.0.2:6379'],
        username: 'platform-auth',
        password: 'cluster-pass',
        tls: { caPath: __filename },
      },
    });
    const sentinel = readPlatformAuthEnv({
      PLATFORM_TOKEN_STORE_SENTINEL_NODES: '10.0.0.1:26379,[::1]:26380',
      PLATFORM_TOKEN_STORE_SENTINEL_MASTER: 'mymaster',
    });
    expect(await settings(sentinel.tokenStore as TokenStoreOptions)).toEqual({
      mode: 'sentinel',
      nodes: [
        { host: '10.0.0.1', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      sentinelMaster: 'mymaster',
      tls: undefined,
      username: undefined,
      password: undefined,
    });
  });

  it('resolves a cluster with TLS, and credentials given beside the URL override the URL', async () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(
      await settings({
        clusterNodes: ['rediss://a.internal:7000', 'rediss://b.internal'],
        tls: { caPath: ca },
      }),
    ).toMatchObject({
      mode: 'cluster',
      nodes: [
        { host: 'a.internal', port: 7000 },
        { host: 'b.internal', port: 6379 },
      ],
      tls: { caPath: ca },
    });
    const standalone = await settings({
      url: 'redis://url-user:url-pass@127.0.0.1:6379/2',
      username: 'acl-user',
      password: 'acl-pass',
    });
    expect(standalone).toMatchObject({ mode: 'standalone', database: 2, username: 'acl-user', tls: undefined });
    expect(reveal(standalone.password!)).toBe('acl-pass');
  });

  it.each<[string, TokenStoreOptions, string, RegExp]>([
    [
      'a URL and cluster nodes',
      { url: 'redis://127.0.0.1:6379', clusterNodes: ['redis://127.0.0.1:7000'] },
      'tokenStore.clusterNodes (PLATFORM_TOKEN_STORE_CLUSTER_NODES)',
      /is set together with tokenStore.url \(PLATFORM_TOKEN_STORE_URL\); configure exactly one Redis mode/,
    ],
    [
      'sentinels without the master',
      { sentinel: { nodes: ['127.0.0.1:26379'] } as never },
      'tokenStore.sentinel.masterName (PLATFORM_TOKEN_STORE_SENTINEL_MASTER)',
      /is required with tokenStore.sentinel.nodes \(PLATFORM_TOKEN_STORE_SENTINEL_NODES\)/,
    ],
    [
      'the master without sentinels',
      { sentinel: { masterName: 'mymaster' } as never },
      'tokenStore.sentinel.masterName (PLATFORM_TOKEN_STORE_SENTINEL_MASTER)',
      /is set without tokenStore.sentinel.nodes \(PLATFORM_TOKEN_STORE_SENTINEL_NODES\)/,
    ],
    [
      'a user without a password',
      { url: 'redis://127.0.0.1:6379', username: 'platform-auth' },
      'tokenStore.username (PLATFORM_TOKEN_STORE_USERNAME)',
      /is set without a password \(tokenStore.password \(PLATFORM_TOKEN_STORE_PASSWORD\)\)/,
    ],
    [
      'a client certificate without its key',
      { url: 'rediss://127.0.0.1:6379', tls: { certPath: __filename } },
      'tokenStore.tls.certPath (PLATFORM_TOKEN_STORE_TLS_CERT_PATH)',
      /is set without tokenStore.tls.keyPath \(PLATFORM_TOKEN_STORE_TLS_KEY_PATH\)/,
    ],
    [
      'TLS files with redis://',
      { url: 'redis://127.0.0.1:6379', tls: { caPath: '/no/such/ca.pem' } },
      'tokenStore.tls.caPath (PLATFORM_TOKEN_STORE_TLS_CA_PATH)',
      /cannot read the file '\/no\/such\/ca.pem' \(ENOENT\)/,
    ],
    [
      'cluster nodes with credentials',
      { clusterNodes: ['redis://app:s3cret-pass@127.0.0.1:7000'] },
      'tokenStore.clusterNodes (PLATFORM_TOKEN_STORE_CLUSTER_NODES)',
      /holds credentials in a URL; set tokenStore.username .* instead \(the value is not shown\)/,
    ],
    [
      'cluster nodes mixing redis:// and rediss://',
      { clusterNodes: ['redis://127.0.0.1:7000', 'rediss://127.0.0.1:7001'] },
      'tokenStore.clusterNodes (PLATFORM_TOKEN_STORE_CLUSTER_NODES)',
      /mixes redis:\/\/ and rediss:\/\//,
    ],
    [
      'a sentinel that is not host:port',
      { sentinel: { nodes: ['127.0.0.1'], masterName: 'mymaster' } },
      'tokenStore.sentinel.nodes (PLATFORM_TOKEN_STORE_SENTINEL_NODES)',
      /entry 1 \('127.0.0.1'\) is not host:port/,
    ],
    [
      'Redis settings beside a tokenStore',
      { instance: new MemoryTokenStore(() => Date.now()), password: 's3cret-pass' },
      'tokenStore.password (PLATFORM_TOKEN_STORE_PASSWORD)',
      /is set together with tokenStore.instance/,
    ],
  ])('refuses %s at start-up, naming the variables', async (_, options, setting, message) => {
    const error = await problemsOf({ encryptionKey: key(), ...options });
    expect(error.problems).toContainEqual(
      expect.objectContaining({ setting, message: expect.stringMatching(message) }),
    );
    expect(JSON.stringify(error)).not.toContain('s3cret-pass');
  });

  it('reports every TLS problem at once, and a CA file that holds no certificate', async () => {
    const notPem = join(dir, 'not-pem.txt');
    writeFileSync(notPem, 'hello');
    const error = await problemsOf({
      encryptionKey: key(),
      url: 'redis://127.0.0.1:6379',
      tls: { caPath: notPem, keyPath: notPem },
    });
    expect(error.problems.map((p) => `${p.setting}: ${p.message}`)).toEqual([
      'tokenStore.tls.keyPath (PLATFORM_TOKEN_STORE_TLS_KEY_PATH): is set without tokenStore.tls.certPath (PLATFORM_TOKEN_STORE_TLS_CERT_PATH): mutual TLS needs the certificate and its key',
      `tokenStore.tls.caPath (PLATFORM_TOKEN_STORE_TLS_CA_PATH): the file '${notPem}' holds no PEM certificate`,
      `tokenStore.tls.keyPath (PLATFORM_TOKEN_STORE_TLS_KEY_PATH): the file '${notPem}' holds no PEM private key`,
      'tokenStore.url (PLATFORM_TOKEN_STORE_URL): is redis:// but TLS files are set; use rediss://',
    ]);
  });

  it('warns about Redis settings without a store', async () => {
    expect((await withStore({ password: 's3cret-pass' })).warnings).toEqual([
      expect.objectContaining({
        setting: 'tokenStore.password (PLATFORM_TOKEN_STORE_PASSWORD)',
        message: 'is set, but no token store is configured',
      }),
    ]);
  });

  it.each([
    ['all zero', Buffer.alloc(32).toString('base64')],
    ['a repeated pattern', Buffer.alloc(32, 'abcd').toString('hex')],
  ])('refuses an encryption key that is %s', async (_, weak) => {
    const error = await problemsOf({ url: 'redis://127.0.0.1:6379', encryptionKey: weak });
    expect(error.problems).toEqual([
      expect.objectContaining({
        setting: 'tokenStore.encryptionKey (PLATFORM_TOKEN_STORE_ENCRYPTION_KEY)',
        message: expect.stringMatching(/^repeats too few distinct bytes to be random/),
      }),
    ]);
    expect(error.message).not.toContain(weak);
  });
});

describe('tokenStore.client', () => {
  it('refuses at start-up what the store cannot call: a client of another library, a pool, a URL, null', async () => {
    class OtherClient {
      sendCommand(command: { name: string }): Promise<unknown> {
        return Promise.resolve(command.name);
      }
      call(): Promise<unknown> {
        return Promise.resolve();
      }
    }
    const pool = createClientPool({ url: 'redis://127.0.0.1:6379' });
    // A string or null passes no type check, but JavaScript and options read from elsewhere reach the check too.
    for (const client of [new OtherClient(), pool, 'redis://127.0.0.1:6379' as never, null as never]) {
      const error = await problemsOf({ client, encryptionKey: randomBytes(32).toString('base64') });
      expect(error.problems).toEqual([
        expect.objectContaining({
          setting: 'tokenStore.client',
          message: expect.stringMatching(
            /^is not a node-redis client from createClient, createCluster or createSentinel/,
          ),
        }),
      ]);
    }
  });

  it('takes a plain adapter object for another client, and each node-redis client kind', async () => {
    const adapter = { sendCommand: (args: string[]) => Promise.resolve(args.length) };
    const kinds = [
      createClient({ url: 'redis://127.0.0.1:6379' }),
      createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }),
      createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] }),
    ];
    for (const client of [adapter, ...kinds]) {
      const config = await withStore({ client, encryptionKey: randomBytes(32).toString('base64') });
      expect(config.tokenStore?.store).toBeInstanceOf(RedisEntryStore);
      expect(config.warnings).toEqual([]);
    }
  });
});
