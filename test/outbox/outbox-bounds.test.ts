import { Queue } from 'bullmq';
import { createClient } from 'redis';
import { describe, expect, it, vi } from 'vitest';
import { ERROR_BODY_BYTES, sendOnce } from '../../lib/outbox/outbox.delivery.js';
import { eventually } from '../support/eventually.js';
import { useLoopbackServers } from '../support/loopback-server.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();
const server = useLoopbackServers();

describe('PlatformOutbox: reads bounded whatever the size', () => {
  it('reads a large error body only up to its bound and closes the connection', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const seen = { written: 0, closed: false, finished: false };
    const platform = await server((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.write('{"error":"server_error","padding":"');
      res.socket?.on('close', () => (seen.closed = true));
      // Lazily: the next chunk only once the client took the last one.
      const more = (): void => {
        while (seen.written < total) {
          seen.written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        seen.finished = true;
        res.end('"}');
      };
      more();
    });

    const verdict = await sendOnce(
      (path, init) => fetch(`${platform.url}${path}`, init),
      { method: 'POST', path: '/api/messages', body: { text: 'hello' } },
      { header: 'Idempotency-Key', value: 'bounded-1' },
      60_000,
      Date.now,
    );

    expect(verdict).toEqual({ kind: 'transient', reason: 'HTTP 500', ambiguous: false });
    await eventually(() => expect(seen.closed).toBe(true));
    expect(seen.finished).toBe(false);
    expect(seen.written).toBeLessThan(total / 4);
    expect(ERROR_BODY_BYTES).toBeLessThanOrEqual(64 * 1024);
  });

  it('still reads the error code of a small error body', async () => {
    const platform = await server((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"maintenance"}');
    });
    const verdict = await sendOnce(
      (path, init) => fetch(`${platform.url}${path}`, init),
      { method: 'POST', path: '/api/messages' },
      { header: 'Idempotency-Key', value: 'bounded-2' },
      60_000,
      Date.now,
    );
    expect(verdict).toMatchObject({ kind: 'transient', reason: 'HTTP 503 maintenance' });
  });

  it('answers status() and health from counts, never listing the failed jobs', async () => {
    const f = await start(redis().url, { worker: { concurrency: 100 } });
    const count = 1_000;
    const client = createClient({ url: redis().url });
    await client.connect();
    const forger = new Queue(f.queueName, { connection: client, prefix: `bull:{${f.queueName}}` });
    try {
      await forger.addBulk(
        Array.from({ length: count }, (_, i) => ({
          name: 'message',
          data: { method: 'TRACE', path: '/' },
          opts: { jobId: `bad-${i}` },
        })),
      );
    } finally {
      await forger.close();
      client.destroy();
    }
    const dead = await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { n: 1 } });
    await eventually(async () => expect(await f.outbox.status()).toMatchObject({ failed: count, sent: 1 }));

    const getRanges = vi.spyOn(Queue.prototype, 'getRanges');
    const readsFailed = () => getRanges.mock.calls.filter(([types]) => types.includes('failed')).length;
    try {
      expect(await f.outbox.status()).toMatchObject({ failed: count, deadLettered: 0, sent: 1, depth: 0 });
      expect(readsFailed()).toBe(0);
      // The spy sees the outbox's reads: the lists do list the failed jobs.
      expect((await f.outbox.failures()).length).toBe(count);
      expect(readsFailed()).toBeGreaterThan(0);
    } finally {
      getRanges.mockRestore();
    }
    expect(dead).toBeTypeOf('string');
  });
});
