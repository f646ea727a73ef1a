import { describe, expect, it } from 'vitest';
import { TokenProvider } from 'nestjs-platform-auth';
import { eventually } from '../support/eventually.js';
import { useRedisServer, type RedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

/** Every value of every key in Redis, as text: what an operator with a dump of the database can read. */
async function everythingStored(server: RedisServer): Promise<string> {
  const keys = (await server.command('KEYS', '*')) as string[];
  const values = await Promise.all(
    keys.map(async (key) => {
      const type = String(await server.command('TYPE', key));
      const read: Record<string, string[]> = {
        string: ['GET', key],
        hash: ['HGETALL', key],
        list: ['LRANGE', key, '0', '-1'],
        set: ['SMEMBERS', key],
        zset: ['ZRANGE', key, '0', '-1', 'WITHSCORES'],
        stream: ['XRANGE', key, '-', '+'],
      };
      return `${key} ${type} ${JSON.stringify(read[type] ? await server.command(...read[type]) : null)}`;
    }),
  );
  return values.join('\n');
}

describe('the outbox at rest', () => {
  it('stores no token, assertion, key or Authorization: only the message and the headers allowed by name', async () => {
    const f = await start(redis().url, { storedHeaders: ['X-Correlation-Id'], sendTimeoutMs: 1_000 });
    const id = await f.outbox.enqueue({
      method: 'POST',
      path: '/api/messages',
      body: { text: 'hello' },
      headers: { 'X-Correlation-Id': 'corr-1' },
    });
    await eventually(() => expect(f.events.map((e) => e.event)).toEqual(['queued', 'sent']));
    // One more that stays in the queue: a job waiting is stored the same way as one sent.
    f.platform.injectFault({ kind: 'hang' }, 'api');
    await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { text: 'waiting' } });
    await eventually(() => expect(f.platform.counters.apiCalls.total).toBe(2));

    const token = f.app.get(TokenProvider).peekAccessToken();
    expect(token).toBeDefined();
    const stored = await everythingStored(redis());
    expect(stored).toContain(id);
    expect(stored).toContain('hello');
    expect(stored).toContain('corr-1');
    expect(stored).not.toContain(token!);
    expect(stored).not.toMatch(/bearer|authorization|client_assertion|PRIVATE KEY|CERTIFICATE/i);
    expect(stored).not.toContain(f.integration.machineId);
    for (const line of f.integration.privateKeyPem.split('\n').filter((l) => l.length > 40)) {
      expect(stored).not.toContain(line);
    }
  });

  it('refuses to store a header that is not allowed by name, and never Authorization', async () => {
    const f = await start(redis().url, { worker: false, storedHeaders: ['X-Correlation-Id'] });
    const message = { method: 'POST', path: '/api/messages' } as const;
    await expect(f.outbox.enqueue({ ...message, headers: { Authorization: 'Bearer abc' } })).rejects.toThrow(
      /the header Authorization is not in storedHeaders/,
    );
    await expect(f.outbox.enqueue({ ...message, headers: { 'X-Secret': 'hunter2' } })).rejects.not.toThrow(/hunter2/);
    expect(await everythingStored(redis())).not.toMatch(/hunter2|Bearer abc/);
  });
});
