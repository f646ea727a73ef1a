import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PlatformOutboxError } from 'nestjs-platform-auth/outbox';
import { withOutboxEnvironment } from '../../lib/outbox/outbox.environment.js';
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
function refusal(env: Record<string, string>, options = {}): PlatformOutboxError {
  try {
    withOutboxEnvironment(options, env);
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformOutboxError);
    return error as PlatformOutboxError;
  }
  throw new Error('the environment was accepted');
}

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

  it('reads every variable into the options, a setting in code winning', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'CA TEXT');
    const env = {
      PLATFORM_OUTBOX_REDIS_URL: 'rediss://user:url-password@redis.internal:6380/2',
      PLATFORM_OUTBOX_REDIS_PASSWORD: 'env-password',
      PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: ca,
      PLATFORM_OUTBOX_WORKER_CONCURRENCY: '8',
      PLATFORM_OUTBOX_RETRY_ATTEMPTS: '20',
      PLATFORM_OUTBOX_RETRY_DELAY_MS: '500',
      PLATFORM_OUTBOX_RETRY_MAX_DELAY_MS: '60000',
    };
    expect(withOutboxEnvironment({ queueName: 'q' }, env)).toEqual({
      queueName: 'q',
      connection: {
        host: 'redis.internal',
        port: 6380,
        username: 'user',
        password: 'env-password',
        db: 2,
        tls: { ca: 'CA TEXT' },
      },
      worker: { concurrency: 8 },
      retry: { attempts: 20, delayMs: 500, maxDelayMs: 60_000 },
    });
    expect(withOutboxEnvironment({}, { PLATFORM_OUTBOX_REDIS_URL: 'redis://127.0.0.1:6379' }).connection).toEqual({
      url: 'redis://127.0.0.1:6379',
    });
    const code = {
      connection: { url: 'redis://code:6379' },
      worker: { lockDurationMs: 5_000 },
      retry: { attempts: 3 },
    };
    // A connection in code: the connection's variables are not read, not even checked.
    const unread = {
      PLATFORM_OUTBOX_REDIS_URL: 'http://not-redis',
      PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: join(dir, 'absent.pem'),
    };
    expect(withOutboxEnvironment(code, { ...env, ...unread })).toEqual({
      connection: { url: 'redis://code:6379' },
      worker: { concurrency: 8, lockDurationMs: 5_000 },
      retry: { attempts: 3, delayMs: 500, maxDelayMs: 60_000 },
    });
    expect(
      withOutboxEnvironment({}, { PLATFORM_OUTBOX_WORKER: 'false', PLATFORM_OUTBOX_WORKER_CONCURRENCY: '8' }),
    ).toEqual({
      worker: false,
    });
  });

  it("reads the workers' lock and stall settings, and refuses them out of bounds", () => {
    const env = {
      PLATFORM_OUTBOX_WORKER_LOCK_DURATION_MS: '2000',
      PLATFORM_OUTBOX_WORKER_STALLED_INTERVAL_MS: '1000',
      PLATFORM_OUTBOX_WORKER_MAX_STALLED_COUNT: '0',
    };
    expect(withOutboxEnvironment({ worker: { concurrency: 2 } }, env)).toEqual({
      worker: { concurrency: 2, lockDurationMs: 2_000, stalledIntervalMs: 1_000, maxStalledCount: 0 },
    });
    const error = refusal({
      PLATFORM_OUTBOX_WORKER_LOCK_DURATION_MS: '50',
      PLATFORM_OUTBOX_WORKER_STALLED_INTERVAL_MS: '1.5',
      PLATFORM_OUTBOX_WORKER_MAX_STALLED_COUNT: '-1',
    });
    expect(error.message.split(/: |; /).slice(1)).toEqual([
      'worker.lockDurationMs (PLATFORM_OUTBOX_WORKER_LOCK_DURATION_MS) must be a whole number from 100 to 3600000',
      'worker.stalledIntervalMs (PLATFORM_OUTBOX_WORKER_STALLED_INTERVAL_MS) must be a whole number from 100 to 3600000',
      "worker.maxStalledCount (PLATFORM_OUTBOX_WORKER_MAX_STALLED_COUNT) must be a whole number from 0 to 1000, got '-1'",
    ]);
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
    expect(error.message.split(/: |; /).slice(1)).toEqual([
      'connection.url (PLATFORM_OUTBOX_REDIS_URL) must be a redis:// or rediss:// URL with a host',
      'the value is not shown',
      'worker.concurrency (PLATFORM_OUTBOX_WORKER_CONCURRENCY) must be a whole number from 1 to 1000',
      "retry.attempts (PLATFORM_OUTBOX_RETRY_ATTEMPTS) must be a whole number from 1 to 1000, got '12x'",
      'retry.delayMs (PLATFORM_OUTBOX_RETRY_DELAY_MS) must be a whole number from 1 to 3600000',
    ]);
    expect(JSON.stringify(error) + String(error.stack)).not.toMatch(/secret/);
  });

  it('refuses a worker switch that is neither true nor false, connection variables without a URL, and a TLS file it cannot read', () => {
    expect(refusal({ PLATFORM_OUTBOX_WORKER: 'sometimes' }).message).toBe(
      "PlatformOutboxModule: worker (PLATFORM_OUTBOX_WORKER) must be true or false, got 'sometimes'",
    );
    expect(refusal({ PLATFORM_OUTBOX_REDIS_PASSWORD: 'env-secret' }).message).toBe(
      'PlatformOutboxModule: PLATFORM_OUTBOX_REDIS_USERNAME, _PASSWORD and _TLS_* need PLATFORM_OUTBOX_REDIS_URL, the Redis they are for',
    );
    const missing = refusal({
      PLATFORM_OUTBOX_REDIS_URL: 'rediss://redis.internal',
      PLATFORM_OUTBOX_REDIS_TLS_CA_PATH: join(dir, 'absent.pem'),
    });
    expect(missing.message).toBe(
      'PlatformOutboxModule: connection.tls.caPath (PLATFORM_OUTBOX_REDIS_TLS_CA_PATH) cannot be read (ENOENT)',
    );
  });
});
