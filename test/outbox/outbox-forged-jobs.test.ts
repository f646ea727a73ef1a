import { Queue } from 'bullmq';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { PlatformOutboxHealthIndicator } from 'nestjs-platform-auth/outbox';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures, type OutboxFixture } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

/** Jobs written into the outbox's queue by anything that can write to Redis: not through `enqueue`. */
async function forge(f: OutboxFixture, jobs: Record<string, unknown>): Promise<void> {
  const client = createClient({ url: redis().url });
  await client.connect();
  const queue = new Queue(f.queueName, { connection: client, prefix: `bull:{${f.queueName}}` });
  try {
    for (const [id, data] of Object.entries(jobs)) await queue.add('message', data, { jobId: id, attempts: 3 });
  } finally {
    await queue.close();
    client.destroy();
  }
}

const failed = (f: OutboxFixture) =>
  new Map(
    f.events
      .filter((e) => e.event === 'failed')
      .map((e) => [e.payload.id, (e.payload as { reason: string }).reason] as const),
  );

describe('PlatformOutbox: jobs the worker reads from Redis', () => {
  it('fails jobs enqueue would refuse, each with a reason, and sends none of them', async () => {
    const f = await start(redis().url, { storedHeaders: ['X-Correlation-Id'] });
    const base = f.integration.moduleOptions.baseUrl;
    const api = { method: 'POST', body: { text: 'forged' } };
    const hostile: Record<string, unknown> = {
      'absolute-url': { ...api, path: `${base}/api/messages` },
      'protocol-relative': { ...api, path: `//${new URL(base).host}/api/messages` },
      'backslash-host': { ...api, path: `/\\${new URL(base).host}/api/messages` },
      'path-array': { ...api, path: ['/api/messages'] },
      'forged-authorization': { ...api, path: '/api/messages', headers: { Authorization: 'Bearer forged' } },
      'header-not-allowed': { ...api, path: '/api/messages', headers: { 'X-Other': 'x' } },
      'odd-method': { ...api, method: 'TRACE', path: '/api/messages' },
      'data-array': [api],
      'too-large': { ...api, path: '/api/messages', body: 'x'.repeat(1_100_000) },
    };
    await forge(f, hostile);

    await eventually(() => expect([...failed(f).keys()].sort()).toEqual(Object.keys(hostile).sort()));
    for (const [id, reason] of failed(f)) {
      expect(reason, id).toMatch(/^refused: the job is not one enqueue would store: /);
      expect(reason).not.toContain('forged');
    }
    expect(failed(f).get('absolute-url')).toMatch(/path must be a path on the platform/);
    expect(failed(f).get('forged-authorization')).toMatch(/Authorization is not in storedHeaders/);
    expect(failed(f).get('too-large')).toMatch(/over 1048576 bytes/);
    expect(f.platform.counters.apiCalls.total).toBe(0);
    expect(f.platform.counters.exchanges.total).toBe(0);
    expect(f.events.filter((e) => e.event === 'sent' || e.event === 'dead-lettered')).toEqual([]);
    expect((await f.outbox.failures()).map((job) => job.id).sort()).toEqual(Object.keys(hostile).sort());

    // The same queue still sends what enqueue stored.
    const id = await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { text: 'real' } });
    await eventually(() => expect(f.events.filter((e) => e.event === 'sent').map((e) => e.payload.id)).toEqual([id]));
  });

  it('fails a job whose data is not JSON, and status, the lists and health keep working', async () => {
    const f = await start(redis().url, { worker: false });
    await forge(f, { garbled: { method: 'POST', path: '/api/messages' } });
    await redis().command('HSET', `bull:{${f.queueName}}:${f.queueName}:garbled`, 'data', '{"method": "POST", "pa');

    expect(await f.outbox.status()).toMatchObject({ waiting: 1, depth: 1 });
    const health = await f.app.get(PlatformOutboxHealthIndicator).isHealthy();
    expect(health['platform-outbox']).toMatchObject({ status: 'up', depth: 1 });
    await expect(
      f.outbox.enqueue({ method: 'POST', path: '/api/messages', idempotencyKey: 'garbled' }),
    ).resolves.toBeTypeOf('string');

    // BullMQ leaves a job it cannot read active: it comes back once its lock ran out and a stall check saw it.
    const worker = await start(redis().url, {
      queueName: f.queueName,
      platform: f.platform,
      worker: { lockDuration: 1_000, stalledInterval: 250 },
    });
    await eventually(() => expect(failed(worker).get('garbled')).toMatch(/its data is not JSON/));
    expect(await f.outbox.failures()).toEqual([expect.objectContaining({ id: 'garbled', method: '', path: '' })]);
    await eventually(async () => expect(await f.outbox.status()).toMatchObject({ failed: 1, sent: 1, depth: 0 }));
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });
});
