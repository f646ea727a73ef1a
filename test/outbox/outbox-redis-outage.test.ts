import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformOutboxError } from 'nestjs-platform-auth/outbox';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { refusedOrigin } from '../support/loopback-server.js';
import { until, useRedisServer } from '../support/redis-server.js';
import { QUICK_RETRY, useOutboxFixtures } from './outbox-kit.js';

// Every write reaches the disk before Redis answers: what BullMQ recorded before Redis died is there when it is back.
const redis = useRedisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
const start = useOutboxFixtures();

let platform: PlatformEmulator;
let proxy: HoldingProxy;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  proxy = await startHoldingProxy(platform.url);
});

afterAll(async () => {
  await proxy?.close();
  await platform?.close();
});

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;
const names = (events: { event: string }[]) => events.map((e) => e.event);
const outageWarnings = (logger: CapturingLogger) =>
  logger.messages('warn').filter((line) => line.includes('Redis is unreachable'));
const recoveryLines = (logger: CapturingLogger) =>
  logger.messages('log').filter((line) => line.includes('Redis answers again'));

/** Whether a client's write command is held at Redis by `CLIENT PAUSE WRITE` (the blocking pop aside). */
async function writeHeldAtRedis(): Promise<boolean> {
  const clients = String(await redis().command('CLIENT', 'LIST')).split('\n');
  return clients.some((client) => /\bflags=\w*b/.test(client) && /\bcmd=evalsha\b/.test(client));
}

describe('PlatformOutbox: Redis lost mid-send and back on the same port', () => {
  it('records a send whose completion Redis lost once it answers: sent once, with no retried or dead-lettered event', async () => {
    const f = await start(redis().url, { platform, through: proxy.url, logger: new CapturingLogger() });
    const held = proxy.holdNextAnswer();
    const id = await f.outbox.enqueue(MESSAGE);
    await held.arrived;
    // The platform has taken the message. Redis takes no more writes, so the worker's completion of the job is in
    // flight at Redis when Redis dies.
    await redis().command('CLIENT', 'PAUSE', '600000', 'WRITE');
    held.release();
    await until(writeHeldAtRedis, "the worker's completion held at Redis");
    await redis().kill();
    await redis().launch();

    await eventually(async () => expect(await f.outbox.status()).toMatchObject({ sent: 1, depth: 0 }));
    expect(names(f.events)).toEqual(['queued', 'sent']);
    expect(f.events[1]?.payload).toMatchObject({ id, attempts: 1 });
    expect(await f.outbox.deadLetters()).toEqual([]);
    // Sent once: not sent again for the platform's idempotency key to absorb.
    expect(f.platform.counters.idempotency).toMatchObject({ keys: 1, duplicates: 0 });
  });

  it('logs one warning when Redis goes and one line when it answers, whatever the jobs; status() names the outage', async () => {
    const logger = new CapturingLogger();
    const f = await start(redis().url, {
      platform,
      logger,
      retry: { attempts: 1_000, delayMs: 20, maxDelayMs: 50 },
      enqueueTimeoutMs: 2_000,
      // A job BullMQ moved to active just as Redis died, whose worker never heard of it, is back within seconds.
      worker: { concurrency: 4, lockDuration: 2_000, stalledInterval: 500 },
    });
    // Jobs in back-off and in flight while Redis is gone: the platform answers 503 to the first sends.
    for (let n = 0; n < 60; n += 1) f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    const ids = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => f.outbox.enqueue({ ...MESSAGE, body: { n } })));
    await eventually(() => expect(names(f.events).filter((name) => name === 'retried').length).toBeGreaterThan(6));

    await redis().kill();
    await eventually(() => expect(outageWarnings(logger)).toHaveLength(1));
    expect(outageWarnings(logger)[0]).toMatch(/^PlatformOutbox \(queue [^)]+\): Redis is unreachable \(redis: \S.*\)/);
    const failure = await f.outbox.status().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PlatformOutboxError);
    expect(failure).toMatchObject({
      reason: 'unavailable',
      message: expect.stringMatching(/unreachable since .+\(redis: /),
    });
    const late = { ...MESSAGE, idempotencyKey: 'enqueued-during-the-outage' };
    await expect(f.outbox.enqueue(late)).rejects.toMatchObject({
      reason: 'unavailable',
      message: expect.stringMatching(/did not answer within 2000 ms; unreachable since .+\(redis: /),
    });

    await redis().launch();
    await eventually(() => expect(recoveryLines(logger)).toHaveLength(1));
    expect(recoveryLines(logger)[0]).toMatch(/Redis answers again after \d+ ms$/);
    // As the docs say: an enqueue that rejected is made again under the same key.
    ids.push(await f.outbox.enqueue(late));
    await eventually(async () => expect(await f.outbox.status()).toMatchObject({ sent: ids.length, depth: 0 }));
    expect(names(f.events)).not.toContain('dead-lettered');
    // Every retry during the outage named its cause; still one warning and one line for the whole outage.
    const reasons = f.events.flatMap((e) => (e.event === 'retried' ? [(e.payload as { reason: string }).reason] : []));
    expect(reasons.filter((reason) => !/^transient: HTTP 503\b|^redis: \S/.test(reason))).toEqual([]);
    expect({ warnings: outageWarnings(logger).length, recoveries: recoveryLines(logger).length }).toEqual({
      warnings: 1,
      recoveries: 1,
    });
  });
});

describe('PlatformOutbox: enqueue while Redis is down', () => {
  it('rejects after enqueueTimeoutMs, not node-redis’s own 5 s, keeps nothing back, and stores what Redis is back in time for', async () => {
    // Longer than node-redis's default bound on a command kept back while its client reconnects (5 s).
    const enqueueTimeoutMs = 6_000;
    const logger = new CapturingLogger();
    const f = await start(redis().url, { platform, logger, enqueueTimeoutMs });
    await f.outbox.status();
    await redis().kill();
    await eventually(() => expect(outageWarnings(logger)).toHaveLength(1));

    const refusal = await f.outbox
      .enqueue({ ...MESSAGE, idempotencyKey: 'while-down' })
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(PlatformOutboxError);
    expect(refusal).toMatchObject({ reason: 'unavailable', message: expect.stringContaining('within 6000 ms') });

    const waiting = f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'back-in-time' });
    await redis().launch();
    const id = await waiting;
    await eventually(() => expect(names(f.events)).toEqual(['queued', 'sent']));
    expect(f.events[1]?.payload).toMatchObject({ id });
    // The refused enqueue was not kept back to be written once Redis answered: its key is still free.
    expect(await f.outbox.status()).toMatchObject({ sent: 1, depth: 0 });
    const other = { ...MESSAGE, body: { text: 'another request' }, idempotencyKey: 'while-down' };
    await expect(f.outbox.enqueue(other)).resolves.toContain('while-down');
  });
});

describe('PlatformOutbox: every operation while Redis is down', () => {
  it('rejects retry(id) and the lists after enqueueTimeoutMs and sends none of their commands once Redis is back', async () => {
    const logger = new CapturingLogger();
    // No workers: every command Redis counts once it is back is one of the calls below, or BullMQ's own start-up.
    const f = await start(redis().url, { platform, logger, worker: false, enqueueTimeoutMs: 500 });
    await f.outbox.status();
    await redis().kill();
    await eventually(() => expect(outageWarnings(logger)).toHaveLength(1));

    const unavailable = { reason: 'unavailable', message: expect.stringContaining('within 500 ms') };
    await expect(f.outbox.retry('outbox-test-job')).rejects.toMatchObject(unavailable);
    await expect(f.outbox.deadLetters()).rejects.toMatchObject(unavailable);

    await redis().launch();
    await eventually(() => expect(recoveryLines(logger)).toHaveLength(1));
    // A call that rejected left nothing queued in the client to run later: no job was looked up, no list read.
    const stats = String(await redis().command('INFO', 'commandstats'));
    expect(stats.match(/^cmdstat_(hgetall|zrevrange|zrange|lrange|evalsha|eval)\b.*$/gm) ?? []).toEqual([]);
    await expect(f.outbox.status()).resolves.toMatchObject({ depth: 0 });
  });
});

describe('PlatformOutbox: reasons name the cause', () => {
  it('dead-letters a message whose token cannot be had with the root of the failure, through the back-off', async () => {
    // Nothing listens there: the token exchange is refused a connection.
    const closed = await refusedOrigin();
    const f = await start(redis().url, { platform, through: closed, retry: { ...QUICK_RETRY, attempts: 3 } });
    const id = await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(names(f.events)).toContain('dead-lettered'));

    const reasons = f.events.flatMap((e) =>
      e.event === 'retried' || e.event === 'dead-lettered' ? [(e.payload as { reason: string }).reason] : [],
    );
    expect(reasons).toHaveLength(3);
    for (const reason of reasons) {
      expect(reason).toMatch(/^transient: token exchange failed: (network_error|backoff) \(ECONNREFUSED\): \S/);
    }
    expect(reasons[0]).toContain(`token endpoint ${new URL(closed).host} unreachable`);
    expect(await f.outbox.deadLetters()).toEqual([expect.objectContaining({ id, reason: reasons[2] })]);
  });
});
