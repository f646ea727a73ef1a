import { describe, expect, it } from 'vitest';
import type { OutboxJob } from 'nestjs-platform-auth/outbox';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;
const names = (events: { event: string }[]) => events.map((e) => e.event);

describe('PlatformOutbox: retry(id) of a dead letter', () => {
  it('asks reconcile before re-sending a dead letter whose last attempt was ambiguous', async () => {
    const asked: OutboxJob[] = [];
    const f = await start(redis().url, {
      retry: { attempts: 1, delayMs: 1, maxDelayMs: 1 },
      reconcile: async (job) => {
        asked.push(job);
        return 'delivered';
      },
    });
    f.platform.injectFault({ kind: 'drop' }, 'api');
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'dropped-1' });
    await eventually(() => expect(names(f.events)).toEqual(['queued', 'dead-lettered']));
    expect(await f.outbox.deadLetters()).toEqual([
      expect.objectContaining({ id, reason: expect.stringMatching(/^ambiguous: /) }),
    ]);

    await f.outbox.retry(id);
    await eventually(() => expect(names(f.events).at(-1)).toBe('sent'));
    expect(f.events.at(-1)?.payload).toMatchObject({ id, reconciled: true });
    expect(asked).toEqual([expect.objectContaining({ id, idempotencyKey: 'dropped-1' })]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, faulted: 1, ok: 0 });
  });

  it('re-sends a dead letter whose last attempt sent nothing without asking reconcile', async () => {
    let asked = 0;
    const f = await start(redis().url, {
      retry: { attempts: 1, delayMs: 1, maxDelayMs: 1 },
      reconcile: async () => {
        asked += 1;
        return 'send';
      },
    });
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    const id = await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(names(f.events)).toEqual(['queued', 'dead-lettered']));

    await f.outbox.retry(id);
    await eventually(() => expect(names(f.events).at(-1)).toBe('sent'));
    expect(asked).toBe(0);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, ok: 1 });
  });
});
