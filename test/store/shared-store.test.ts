import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformHttpService, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { packageRoot } from '../support/built-package.js';
import { useCleanup } from '../support/cleanup.js';
import { startHoldingProxy } from '../support/holding-proxy.js';
import { refusedPort } from '../support/loopback-server.js';
import { useRedisServer } from '../support/redis-server.js';
import { MemoryTokenStore } from '../support/memory-token-store.js';
import { storeOf, withStore } from '../support/store-fleet.js';
import { eventually } from '../support/eventually.js';

const redis = useRedisServer();
const track = useCleanup();

class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(message: unknown): void {
    this.warnings.push(`error: ${String(message)}`);
  }
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

interface Platform {
  clock: FakeClock;
  emulator: PlatformEmulator;
  integration: EmulatedIntegration;
  /** Options every instance of this test shares: one integration, one store namespace, one key. */
  shared: PlatformAuthOptions;
}

async function startPlatform(): Promise<Platform> {
  // Sleeps (the minimum interval between two exchanges of one cache) pass at once; tests move time themselves.
  const clock = new FakeClock(Date.now(), { autoAdvance: true });
  const emulator = await PlatformEmulator.start({ now: () => clock.now() });
  track(emulator);
  const integration = await emulator.createIntegration();
  const shared: PlatformAuthOptions = {
    ...integration.moduleOptions,
    clock,
    // Replicas join one by one and the tests count exchanges from the first call, not from each replica's boot.
    startupCheck: 'off',
    tokenStore: {
      url: redis().url,
      encryptionKey: randomBytes(32).toString('hex'),
      keyPrefix: `shared-${randomBytes(4).toString('hex')}:`,
      // Generous, so that a busy machine's slow Redis round trips and exchanges neither time out nor outlive a lock.
      operationTimeoutMs: 2_000,
      lockTtlMs: 10_000,
      waitTimeoutMs: 20_000,
    },
  };
  return { clock, emulator, integration, shared };
}

/** One replica: a module instance with its own token cache. */
async function replica(
  options: PlatformAuthOptions,
  logger?: LoggerService,
): Promise<{ tokens: TokenProvider; http: PlatformHttpService; moduleRef: TestingModule }> {
  const builder = Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(options)] });
  if (logger) builder.setLogger(logger);
  const moduleRef = await builder.compile();
  await moduleRef.init();
  track(moduleRef);
  return { tokens: moduleRef.get(TokenProvider), http: moduleRef.get(PlatformHttpService), moduleRef };
}

/** Keys Redis has expired since it started (`INFO stats`): one more once a lock lapses. */
async function expiredKeyCount(): Promise<number> {
  const stats = (await redis().command('INFO', 'stats')) as string;
  return Number(/^expired_keys:(\d+)/m.exec(stats)?.[1]);
}

async function storedKeys(prefix: string): Promise<string[]> {
  return (await redis().command('KEYS', `${prefix}*`)) as string[];
}

describe('credential rotation with a shared store', () => {
  it("refuses a cut-over to another machineId, which would hand this integration's tokens to the fleet", async () => {
    const { shared, emulator, integration } = await startPlatform();
    const { tokens } = await replica(shared);
    const token = await tokens.getAccessToken();
    const other = await emulator.createIntegration({ name: 'other' });
    const refused = tokens.rotateCredentials({
      key: { privateKey: other.privateKeyPem, certificate: other.certificatePem },
      machineId: other.machineId,
    });
    await expect(refused).rejects.toMatchObject({ code: 'PLATFORM_AUTH_CREDENTIAL_ROTATION', stage: 'validation' });
    expect(await tokens.getAccessToken()).toBe(token);
    expect(tokens.status().credentials.thumbprint).toBe(integration.thumbprint);
  });
});

describe('the shared token store at rest', () => {
  it('keeps no token in Redis and no identifier in key names: values are JWE (dir, A256GCM) with a key id', async () => {
    const { shared, integration } = await startPlatform();
    const { tokens } = await replica(shared);
    const token = await tokens.getAccessToken();
    const keys = await storedKeys(storeOf(shared).keyPrefix!);
    expect(keys).toHaveLength(1);
    const [key] = keys as [string];
    expect(key).toMatch(/^shared-[0-9a-f]{8}:\{[A-Za-z0-9_-]{32}\}:token$/);
    for (const identifier of [integration.machineId, integration.thumbprint, new URL(shared.baseUrl).host]) {
      expect(key).not.toContain(identifier);
    }
    const raw = (await redis().command('GET', key)) as string;
    expect(raw).not.toContain(token);
    expect(raw).not.toContain(token.split('.')[1] ?? token);
    const jwe = raw.split(':')[2];
    expect(jwe.split('.')).toHaveLength(5);
    const header = JSON.parse(Buffer.from(jwe.split('.')[0], 'base64url').toString()) as Record<string, unknown>;
    expect(header).toEqual({ alg: 'dir', enc: 'A256GCM', kid: expect.stringMatching(/^[A-Za-z0-9_-]{11}$/) });
  });

  it('reads a tampered entry (one flipped byte) as a miss and exchanges instead', async () => {
    const { shared, emulator } = await startPlatform();
    const first = await (await replica(shared)).tokens.getAccessToken();
    const [key] = (await storedKeys(storeOf(shared).keyPrefix!)) as [string];
    const raw = (await redis().command('GET', key)) as string;
    // A byte in the middle of the ciphertext, not the version or tag the store compares.
    const at = raw.length - 40;
    const flipped = raw.slice(0, at) + String.fromCharCode(raw.charCodeAt(at) ^ 1) + raw.slice(at + 1);
    expect(flipped).not.toBe(raw);
    await redis().command('SET', key, flipped, 'PX', '60000');

    const second = await (await replica(shared)).tokens.getAccessToken();
    expect(second).not.toBe(first);
    expect(emulator.counters.exchanges.total).toBe(2);
  });

  it('reads an entry sealed with another key as a miss, and one sealed with a previous key (rotation) as a hit', async () => {
    const { shared, emulator } = await startPlatform();
    const oldKey = storeOf(shared).encryptionKey as string;
    const first = await (await replica(shared)).tokens.getAccessToken();

    const rotated = await replica(withStore(shared, { encryptionKey: [randomBytes(32).toString('base64'), oldKey] }));
    expect(await rotated.tokens.getAccessToken()).toBe(first);
    expect(emulator.counters.exchanges.total).toBe(1);

    const stranger = await replica(withStore(shared, { encryptionKey: randomBytes(32).toString('base64url') }));
    expect(await stranger.tokens.getAccessToken()).not.toBe(first);
    expect(emulator.counters.exchanges.total).toBe(2);
  });
});

describe('the shared token store protocol', () => {
  it('never lets a holder whose lock lapsed replace the newer token another replica wrote', async () => {
    const platform = await startPlatform();
    const { emulator, clock } = platform;
    const shared = withStore(platform.shared, { lockTtlMs: 300 });
    // The slow replica reaches the platform through a proxy that holds its exchange until the fast one is done.
    const proxy = track(await startHoldingProxy(emulator.url));
    const slow = await replica({ ...shared, baseUrl: proxy.url, audience: emulator.audience });
    const expiredBefore = await expiredKeyCount();
    const slowExchange = proxy.holdNext();
    const slowToken = slow.tokens.getAccessToken();
    await slowExchange.arrived;
    // Redis expires the slow holder's 300 ms lock (no other key of this test expires); its exchange is still held.
    await eventually(async () => expect(await expiredKeyCount()).toBeGreaterThan(expiredBefore));
    clock.advance(10_000);
    const fast = await (await replica(shared)).tokens.getAccessToken();
    slowExchange.release();
    expect(await slowToken).not.toBe(fast);
    expect(emulator.counters.exchanges.total).toBe(2);

    // The slow holder's write came last but is older (it expires 10 s earlier): the store kept the newer token.
    const cold = await replica(shared);
    expect(await cold.tokens.getAccessToken()).toBe(fast);
    expect(emulator.counters.exchanges.total).toBe(2);
  });

  it('shares one token through a TokenStore of another engine, passed as tokenStore.instance', async () => {
    const { shared, emulator, clock } = await startPlatform();
    const { encryptionKey, keyPrefix } = storeOf(shared);
    const instance = new MemoryTokenStore(() => clock.now());
    const options: PlatformAuthOptions = { ...shared, tokenStore: { instance, encryptionKey, keyPrefix } };
    const a = await replica(options);
    const b = await replica(options);
    expect(await b.tokens.getAccessToken()).toBe(await a.tokens.getAccessToken());
    expect(emulator.counters.exchanges.total).toBe(1);
    expect(a.tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'provided' });
    expect(await storedKeys(keyPrefix!)).toEqual([]);
  });

  it('on a 401 drops the shared token only while it is still the stored one', async () => {
    const { shared, emulator } = await startPlatform();
    const a = await replica(shared);
    const b = await replica(shared);
    const first = await a.tokens.getAccessToken();
    expect(await b.tokens.getAccessToken()).toBe(first);
    emulator.revokeToken(first);

    // A's request meets a 401: the shared token is dropped, A exchanges once and shares the new token.
    expect((await a.http.axiosRef.get('/api/billing')).status).toBe(200);
    expect(emulator.counters.exchanges.total).toBe(2);
    const second = await a.tokens.getAccessToken();
    expect(second).not.toBe(first);

    // B's late 401 for the old token must not drop the new one: B picks it up from the store, no exchange.
    expect((await b.http.axiosRef.get('/api/billing')).status).toBe(200);
    expect(await b.tokens.getAccessToken()).toBe(second);
    expect(await (await replica(shared)).tokens.getAccessToken()).toBe(second);
    expect(emulator.counters.exchanges.total).toBe(2);
  });

  it.each([
    // Held back for the failure back-off (1 s), or for as long as the platform asked.
    { failure: 'a refusal', fault: { status: 400, body: { error: 'invalid_grant' } }, transient: false, wait: 1 },
    {
      failure: 'a platform outage',
      fault: { status: 503, headers: { 'Retry-After': '30' } },
      transient: true,
      wait: 30,
    },
  ])('hands the fleet $failure as the replica that met it saw it', async ({ fault, transient, wait }) => {
    const { shared, emulator } = await startPlatform();
    const a = await replica(shared);
    const b = await replica(shared);
    emulator.injectFault({ kind: 'status', ...fault });
    await expect(a.tokens.getAccessToken()).rejects.toMatchObject({ reason: 'http_error', transient });

    // B fails fast on A's shared failure, and classifies it as A did: the exception filter answers both alike.
    await expect(b.tokens.getAccessToken()).rejects.toMatchObject({
      reason: 'backoff',
      attempts: 0,
      transient,
      retryAfterSeconds: wait,
    });
    expect(emulator.counters.exchanges.total).toBe(1);
  });

  it('serves a cached token without the store: frozen Redis costs a cached call nothing', async () => {
    const { shared } = await startPlatform();
    // A call that asked the frozen store would wait a minute for it.
    const patient = { operationTimeoutMs: 60_000, lockTtlMs: 60_000, waitTimeoutMs: 90_000 };
    const { tokens } = await replica(withStore(shared, patient));
    const token = await tokens.getAccessToken();
    redis().pause();
    try {
      expect(tokens.peekAccessToken()).toBe(token);
      // Had it asked, it would have waited out the operation timeout, exchanged locally (another token) and said
      // the store was degraded.
      expect(await tokens.getAccessToken()).toBe(token);
      expect(tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'standalone' });
    } finally {
      redis().resume();
    }
  });

  it('starts and serves tokens with Redis unreachable, saying so once', async () => {
    const { shared, emulator } = await startPlatform();
    const logger = new CapturingLogger();
    const closedPort = `redis://127.0.0.1:${await refusedPort()}`;
    // Waiting for the store, rather than giving up on the refused connection at once, would take a minute.
    const patient = { operationTimeoutMs: 60_000, lockTtlMs: 60_000, waitTimeoutMs: 90_000 };
    const { tokens } = await replica(withStore(shared, { url: closedPort, ...patient }), logger);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    // Given up on because the connection was refused, not because the minute-long operation timeout ran out.
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'ECONNREFUSED' });
    expect(emulator.counters.exchanges.total).toBe(1);
    expect(tokens.invalidate(await tokens.getAccessToken())).toBe(true);
    await tokens.getAccessToken();
    expect(logger.warnings).toEqual([
      expect.stringMatching(/^Token store unavailable \(\w+\); exchanging tokens locally/),
    ]);
    expect(logger.warnings[0]).not.toContain(closedPort);
  });
});

describe('the shared token store at shutdown', () => {
  it.each(['reachable', 'unreachable'] as const)(
    'leaves no handle open after app.close() with Redis %s (no socket, no reconnect timer)',
    async (state) => {
      // The process below keeps real time, so this emulator does too.
      const emulator = await PlatformEmulator.start();
      track(emulator);
      const integration = await emulator.createIntegration();
      const script = `
        import 'reflect-metadata';
        import { NestFactory } from '@nestjs/core';
        import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
        const app = await NestFactory.createApplicationContext(
          PlatformAuthModule.forRoot(JSON.parse(process.env.MODULE_OPTIONS)), { logger: false });
        await app.get(TokenProvider).getAccessToken();
        await app.close();
        // One timer turn: a destroyed socket's handle is released in the loop's close phase.
        await new Promise((resolve) => setTimeout(resolve, 10));
        console.log(JSON.stringify(process.getActiveResourcesInfo().filter((r) => !['TTYWrap', 'PipeWrap'].includes(r))));
      `;
      const options = {
        ...integration.moduleOptions,
        tokenStore: {
          url: state === 'reachable' ? redis().url : `redis://127.0.0.1:${redis().port + 1}`,
          encryptionKey: randomBytes(32).toString('base64'),
        },
      };
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        cwd: packageRoot,
        env: { ...process.env, MODULE_OPTIONS: JSON.stringify(options) },
      });
      expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual([]);
    },
  );
});

describe('without the redis package installed', () => {
  it('runs without a store, and with a store URL fails at start-up saying what to install', async () => {
    const emulator = await PlatformEmulator.start();
    track(emulator);
    const integration = await emulator.createIntegration();
    // A resolve hook that makes `redis` (and its @redis/* parts) missing, as for a user who never installed it.
    const hideRedis = `data:text/javascript,export async function resolve(specifier, context, next) {
      if (specifier === 'redis' || specifier.startsWith('@redis/')) throw new Error('Cannot find package ' + specifier);
      return next(specifier, context);
    }`;
    const script = `
      import 'reflect-metadata';
      import { register } from 'node:module';
      register(${JSON.stringify(hideRedis)});
      const { NestFactory } = await import('@nestjs/core');
      const { PlatformAuthModule, TokenProvider } = await import('nestjs-platform-auth');
      const run = async (options) => {
        const app = await NestFactory.createApplicationContext(PlatformAuthModule.forRoot(options), { logger: false, abortOnError: false });
        try { return typeof (await app.get(TokenProvider).getAccessToken()); } finally { await app.close(); }
      };
      const options = JSON.parse(process.env.MODULE_OPTIONS);
      const plain = await run(options);
      const withStore = await run({ ...options, tokenStore: { url: 'redis://127.0.0.1:6379', encryptionKey: '${randomBytes(32).toString('hex')}' } })
        .catch((error) => error.name + ': ' + error.message);
      console.log(JSON.stringify({ plain, withStore }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: packageRoot,
      env: { ...process.env, MODULE_OPTIONS: JSON.stringify(integration.moduleOptions) },
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { plain: string; withStore: string };
    expect(result.plain).toBe('string');
    expect(result.withStore).toMatch(
      /^PlatformAuthConfigError: .*tokenStore\.url \(PLATFORM_TOKEN_STORE_URL\): a connection to Redis needs the `redis` package .*npm install redis/s,
    );
  });
});
