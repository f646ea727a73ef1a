import { createHash, randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  PlatformFetch,
  TokenExchangeError,
  TokenProvider,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { PlatformEmulator, createTestCredentials, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useRedisServer } from '../support/redis-server.js';

/**
 * Replicas share entries through Redis only with replicas that hold the key pair the entries were minted for. Each
 * Nest module here stands for a process of its own (one runtime, one connection to Redis); they share one
 * redis-server, one key prefix and one encryption key, as the tenants of one registry do.
 */
const redis = useRedisServer();
const encryptionKey = randomBytes(32).toString('hex');
let platform: PlatformEmulator;
let acme: EmulatedIntegration;
let initech: EmulatedIntegration;
let keyPrefix: string;
const modules: TestingModule[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  acme = await platform.createIntegration({ name: 'acme' });
  initech = await platform.createIntegration({ name: 'initech' });
});

afterEach(async () => {
  await Promise.all(modules.splice(0).map((moduleRef) => moduleRef.close()));
  platform.resetCounters();
});

afterAll(() => platform.close());

async function replica(options: Partial<PlatformAuthOptions>): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forRoot({
        ...acme.moduleOptions,
        startupCheck: 'off',
        logger: new CapturingLogger(),
        tokenStore: { url: redis().url, encryptionKey, keyPrefix, operationTimeoutMs: 5_000, waitTimeoutMs: 20_000 },
        ...options,
      }),
    ],
  }).compile();
  modules.push(moduleRef);
  await moduleRef.init();
  return moduleRef;
}

/** Initech's own key and certificate with acme's machineId: a typo an operator makes while onboarding. */
const typo = (): Partial<PlatformAuthOptions> => ({ key: initech.moduleOptions.key, machineId: acme.machineId });

beforeEach(() => {
  // Each case on entries of its own: what one stored is not there for the next.
  keyPrefix = `isolation-${randomBytes(4).toString('hex')}:`;
});

describe('entries bound to the key pair', () => {
  it("a replica with another integration's machineId never gets that integration's stored token", async () => {
    const owner = (await replica({})).get(TokenProvider);
    const token = await owner.getAccessToken();
    const stranger = (await replica(typo())).get(TokenProvider);

    const refused = await stranger.getAccessToken().catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(TokenExchangeError);
    expect(String(refused)).not.toContain(token);
    expect(platform.counters.exchanges).toMatchObject({ accepted: 1, rejected: 1 });
    // The refusal is the stranger's own: acme's next call still uses its token, and nothing waits for a back-off.
    expect(await owner.getAccessToken()).toBe(token);
  });

  it("a refusal of the one with the wrong machineId is never the owner's failure, even when it goes first", async () => {
    const stranger = (await replica(typo())).get(TokenProvider);
    await expect(stranger.getAccessToken()).rejects.toBeInstanceOf(TokenExchangeError);
    const owner = (await replica({})).get(PlatformFetch);

    const response = await owner.fetch('/api/billing');

    expect(response.status).toBe(200);
    expect(platform.counters.exchanges).toMatchObject({ accepted: 1, rejected: 1 });
  });

  it("the one with the wrong machineId sends nothing to the platform's API, so no answer to it can hold the owner", async () => {
    const owner = (await replica({ rateLimit: { requestsPerSecond: 50 } })).get(PlatformFetch);
    expect((await owner.fetch('/api/billing')).status).toBe(200);
    const stranger = (await replica({ ...typo(), rateLimit: { requestsPerSecond: 50 } })).get(PlatformFetch);

    await expect(stranger.fetch('/api/billing')).rejects.toBeInstanceOf(TokenExchangeError);

    expect(platform.counters.apiCalls.total).toBe(1);
    expect((await owner.fetch('/api/billing')).status).toBe(200);
  });

  it("a Retry-After answered to a pair the platform also accepts under the machineId does not hold the other pair's calls", async () => {
    const owner = await platform.createIntegration({ name: 'reregistered' });
    const rateLimit = { requestsPerSecond: 50, maxWaitMs: 1_000 };
    const first = (await replica({ ...owner.moduleOptions, rateLimit })).get(PlatformFetch);
    expect((await first.fetch('/api/billing')).status).toBe(200);
    // The platform now takes another certificate under the same machineId; the first pair's token stays valid.
    const other = await createTestCredentials();
    platform.replaceCertificate(owner.machineId, other.certificatePem);
    const key = { privateKey: other.privateKeyPem, certificate: other.certificatePem };
    const second = (await replica({ ...owner.moduleOptions, key, rateLimit })).get(PlatformFetch);

    platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: 600 }, 'api');
    await expect(second.fetch('/api/billing')).rejects.toMatchObject({ status: 429 });

    // Ten minutes asked of the second pair: on a shared bucket the first would fail at once (maxWaitMs 1 s).
    expect((await first.fetch('/api/billing')).status).toBe(200);
    expect(platform.counters.exchanges.accepted).toBe(2);
  });

  it('replicas holding the same pair still share one token', async () => {
    const replicas = await Promise.all([replica({}), replica({}), replica({})]);

    const tokens = await Promise.all(replicas.map((moduleRef) => moduleRef.get(TokenProvider).getAccessToken()));

    expect(new Set(tokens).size).toBe(1);
    expect(platform.counters.exchanges.accepted).toBe(1);
  });

  it('an entry under the namespace an earlier version wrote (token URL, audience, machineId) is never read', async () => {
    const first = (await replica({})).get(TokenProvider);
    await first.getAccessToken();
    const [written] = (await redis().command('KEYS', `${keyPrefix}*:token`)) as string[];
    // What the earlier version would have read for this integration: the same entry, under its key name.
    const audience = new URL(acme.moduleOptions.baseUrl).host;
    const tokenUrl = `${acme.moduleOptions.baseUrl}/loginservice/connect/token`;
    const earlier = createHash('sha256').update('platform-auth namespace');
    for (const part of [tokenUrl, audience, acme.machineId]) earlier.update('\0').update(part);
    const earlierKey = `${keyPrefix}{${earlier.digest('base64url').slice(0, 32)}}:token`;
    await redis().command('RENAME', written, earlierKey);

    const later = (await replica({})).get(TokenProvider);
    await later.getAccessToken();

    expect(platform.counters.exchanges.accepted).toBe(2);
    expect(await redis().command('EXISTS', earlierKey)).toBe(1);
  });
});

describe('a planned rotation still converges through the store', () => {
  let current: EmulatedIntegration;
  let next: Awaited<ReturnType<typeof createTestCredentials>>;

  beforeAll(async () => {
    current = await platform.createIntegration({ name: 'rotating' });
    next = await createTestCredentials();
  });

  const pair = (credentials: { privateKeyPem: string; certificatePem: string }) => ({
    privateKey: credentials.privateKeyPem,
    certificate: credentials.certificatePem,
  });

  it('a replica still on the current pair uses the token a replica on the promoted pair stored: no refusal', async () => {
    platform.replaceCertificate(current.machineId, next.certificatePem);
    const promoted = await replica({ ...current.moduleOptions, key: pair(next) });
    const holdingBoth = await replica({ ...current.moduleOptions, next: pair(next) });

    const token = await promoted.get(TokenProvider).getAccessToken();

    expect(await holdingBoth.get(TokenProvider).getAccessToken()).toBe(token);
    expect(platform.counters.exchanges).toMatchObject({ accepted: 1, rejected: 0 });
  });

  it('the replica refused first switches, and the promoted one shares its token: one refusal, one exchange', async () => {
    const holdingBoth = await replica({ ...current.moduleOptions, next: pair(next) });
    const promoted = await replica({ ...current.moduleOptions, key: pair(next) });

    const token = await holdingBoth.get(TokenProvider).getAccessToken();

    expect(await promoted.get(TokenProvider).getAccessToken()).toBe(token);
    expect(platform.counters.exchanges).toMatchObject({ accepted: 1, rejected: 1 });
  });
});
