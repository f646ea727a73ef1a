import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PlatformOutboxError, type PlatformOutboxOptions } from 'nestjs-platform-auth/outbox';
import { resolveOutboxSettings } from '../../lib/outbox/outbox.settings.js';
import { restoreEnv } from '../support/environment.js';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const PASSWORD = randomBytes(12).toString('hex');
/** A Redis that takes the outbox's user only with its password. */
const redis = useRedisServer({
  args: [
    '--requirepass',
    randomBytes(12).toString('hex'),
    '--user',
    'outbox',
    'on',
    `>${PASSWORD}`,
    '~*',
    '&*',
    '+@all',
  ],
});
const start = useOutboxFixtures();
const saved = { ...process.env };
afterEach(() => restoreEnv(saved));
const dir = mkdtempSync(join(tmpdir(), 'outbox-environment-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The outbox's start-up error for `env`, with options `options`. */
function refusal(env: Record<string, string>, options: PlatformOutboxOptions = {}): PlatformOutboxError {
  try {
    resolveOutboxSettings(options, env);
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformOutboxError);
    return error as PlatformOutboxError;
  }
  throw new Error('the environment was accepted');
}

/** The problems of a refusal, one by one. */
const problems = (error: Error) => error.message.replace(/^PlatformOutboxModule: /, '').split('; ');

describe('the outbox from PLATFORM_OUTBOX_* variables', () => {
  it('connects with the user and password, and dead-letters after the attempts the variables give', async () => {
    Object.assign(process.env, {
      PLATFORM_OUTBOX_REDIS_URL: redis().url,
      PLATFORM_OUTBOX_REDIS_USERNAME: 'outbox',
      PLATFORM_OUTBOX_REDIS_PASSWORD: PASSWORD,
      PLATFORM_OUTBOX_RETRY_ATTEMPTS: '1',
      PLATFORM_OUTBOX_WORKER_CONCURRENCY: '2',
    });
    // The fixture's connection and retry in code left out: the variables give them.
    const f = await start(redis().url, { connection: undefined, retry: undefined });
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { text: 'hello' } });
    await eventually(() => expect(f.events.map((e) => e.event)).toEqual(['queued', 'dead-lettered']));
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it('reads its variables where the options leave a setting unset, a setting in code winning', () => {
    const env = {
      PLATFORM_OUTBOX_REDIS_URL: 'redis://127.0.0.1:6379',
      PLATFORM_OUTBOX_WORKER_CONCURRENCY: '8',
      PLATFORM_OUTBOX_RETRY_ATTEMPTS: '20',
      PLATFORM_OUTBOX_RETRY_DELAY_MS: '500',
      PLATFORM_OUTBOX_RETRY_MAX_DELAY_MS: '60000',
    };
    const fromEnv = resolveOutboxSettings({ queueName: 'q' }, env);
    expect(fromEnv.worker).toEqual({ concurrency: 8, maxStalledCount: 20 });
    expect(fromEnv.delivery).toMatchObject({ attempts: 20, delayMs: 500, maxDelayMs: 60_000 });
    // BullMQ's own options pass through as they are, next to the outbox's defaults.
    const code = resolveOutboxSettings(
      { worker: { lockDuration: 5_000, maxStalledCount: 1 }, retry: { attempts: 3 } },
      env,
    );
    expect(code.worker).toEqual({ concurrency: 8, lockDuration: 5_000, maxStalledCount: 1 });
    expect(code.delivery).toMatchObject({ attempts: 3, delayMs: 500 });
    expect(resolveOutboxSettings({}, { ...env, PLATFORM_OUTBOX_WORKER: 'false' }).worker).toBeUndefined();
    expect(resolveOutboxSettings({}, { PLATFORM_OUTBOX_REDIS_URL: 'redis://127.0.0.1:6379' })).toMatchObject({
      worker: { concurrency: 4, maxStalledCount: 12 },
      delivery: { attempts: 12, delayMs: 1_000, maxDelayMs: 300_000 },
    });
  });

  it("reads the Redis variables as the store's, by their meaning: Cluster, Sentinel, a user and TLS files", () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(() =>
      resolveOutboxSettings(
        {},
        {
          PLATFORM_OUTBOX_REDIS_CLUSTER_NODES: 'rediss://redis-0:6379, rediss://redis-1:6379',
          PLATFORM_OUTBOX_REDIS_USERNAME: 'outbox',
          PLATFORM_OUTBOX_REDIS_PASSWORD: 'env-password',
          PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: ca,
        },
      ),
    ).not.toThrow();
    expect(() =>
      resolveOutboxSettings(
        {},
        {
          PLATFORM_OUTBOX_REDIS_SENTINEL_NODES: 'sentinel-0:26379,sentinel-1:26379',
          PLATFORM_OUTBOX_REDIS_SENTINEL_MASTER: 'mymaster',
        },
      ),
    ).not.toThrow();
    // The store's rules, named by the outbox's option and variables.
    expect(
      refusal({
        PLATFORM_OUTBOX_REDIS_URL: 'redis://127.0.0.1:6379',
        PLATFORM_OUTBOX_REDIS_SENTINEL_NODES: 'sentinel-0:26379',
      }).message,
    ).toContain(
      'connection.sentinel.nodes (PLATFORM_OUTBOX_REDIS_SENTINEL_NODES) is set together with connection.url (PLATFORM_OUTBOX_REDIS_URL); configure exactly one Redis mode',
    );
    expect(problems(refusal({ PLATFORM_OUTBOX_REDIS_CLUSTER_NODES: 'rediss://user:pw@redis-0:6379' }))[0]).toMatch(
      /^connection\.clusterNodes \(PLATFORM_OUTBOX_REDIS_CLUSTER_NODES\) holds credentials in a URL/,
    );
    // A connection in code: the connection's variables are not read, not even checked.
    const unread = {
      PLATFORM_OUTBOX_REDIS_URL: 'http://not-redis',
      PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: join(dir, 'absent.pem'),
    };
    expect(() => resolveOutboxSettings({ connection: { url: 'redis://code:6379' } }, unread)).not.toThrow();
  });

  it('refuses bad values naming each variable, never the URL or the password', () => {
    const error = refusal({
      PLATFORM_OUTBOX_REDIS_URL: 'http://user:url-secret@redis.internal',
      PLATFORM_OUTBOX_REDIS_PASSWORD: 'env-secret',
      PLATFORM_OUTBOX_RETRY_ATTEMPTS: '12x',
      PLATFORM_OUTBOX_RETRY_DELAY_MS: '0',
      PLATFORM_OUTBOX_WORKER_CONCURRENCY: '2.5',
    });
    expect(error.reason).toBe('config');
    expect(problems(error)).toEqual([
      'connection.url (PLATFORM_OUTBOX_REDIS_URL) must be a redis:// or rediss:// URL with a host',
      'the value is not shown',
      "retry.attempts (PLATFORM_OUTBOX_RETRY_ATTEMPTS) must be a whole number from 1 to 1000, got '12x'",
      "retry.delayMs (PLATFORM_OUTBOX_RETRY_DELAY_MS) must be a whole number from 1 to 3600000, got '0'",
      "worker.concurrency (PLATFORM_OUTBOX_WORKER_CONCURRENCY) must be a whole number from 1 to 1000, got '2.5'",
    ]);
    expect(JSON.stringify(error) + String(error.stack)).not.toMatch(/secret/);
  });

  it('refuses a worker switch that is neither true nor false, a user without a password, and a TLS file it cannot read', () => {
    expect(refusal({ PLATFORM_OUTBOX_WORKER: 'sometimes', PLATFORM_OUTBOX_REDIS_URL: 'redis://h:1' }).message).toBe(
      "PlatformOutboxModule: worker (PLATFORM_OUTBOX_WORKER) must be true or false, got 'sometimes'",
    );
    expect(
      problems(refusal({ PLATFORM_OUTBOX_REDIS_URL: 'redis://h:1', PLATFORM_OUTBOX_REDIS_USERNAME: 'u' })),
    ).toEqual([
      'connection.username (PLATFORM_OUTBOX_REDIS_USERNAME) is set without a password (connection.password (PLATFORM_OUTBOX_REDIS_PASSWORD))',
    ]);
    expect(problems(refusal({}))).toEqual([
      expect.stringMatching(/^no Redis connection: .*PLATFORM_OUTBOX_REDIS_URL$/),
    ]);
    const missing = refusal({
      PLATFORM_OUTBOX_REDIS_URL: 'rediss://redis.internal',
      PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: join(dir, 'absent.pem'),
    });
    expect(problems(missing)).toEqual([
      "connection.tls.caPath (PLATFORM_OUTBOX_REDIS_TLS_CA_PATH) cannot read the file '" +
        join(dir, 'absent.pem') +
        "' (ENOENT)",
    ]);
  });
});
