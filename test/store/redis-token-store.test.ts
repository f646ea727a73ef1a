import { randomBytes, randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigReport } from '../../lib/options/config.report.js';
import { resolveRedisConnection } from '../../lib/store/redis-connection.options.js';
import { OwnedRedisChannel, clientChannel } from '../../lib/store/redis.channel.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, RedisEntryStore } from '../../lib/store/token-store.redis.js';
import { useRedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
const stores: RedisEntryStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

/** The bound the module puts on an entry with the default response bound (2 × 64 KiB + 1 KiB). */
const MAX_ENTRY_BYTES = 132_096;

/** A store on a connection of its own to `url`, as the module makes one for `tokenStore.url`. */
function storeOf({ url = redis().url, connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS } = {}): RedisEntryStore {
  const connection = resolveRedisConnection({ url }, new ConfigReport())!;
  const store = new RedisEntryStore(new OwnedRedisChannel(connection, connectTimeoutMs), MAX_ENTRY_BYTES);
  stores.push(store);
  return store;
}

const key = (): string => `test:{${randomUUID()}}:token`;

describe('the Redis token store on a real redis-server', () => {
  it('writes only newer versions: an older write cannot replace a newer entry', async () => {
    const store = storeOf();
    const k = key();
    expect(await store.setIfNewer(k, { version: 200, tag: 'b', payload: 'newer' }, 60_000)).toBe(true);
    expect(await store.setIfNewer(k, { version: 100, tag: 'a', payload: 'older' }, 60_000)).toBe(false);
    expect(await store.setIfNewer(k, { version: 200, tag: 'c', payload: 'same' }, 60_000)).toBe(false);
    expect(await store.get(k)).toEqual({ version: 200, tag: 'b', payload: 'newer' });
    const writtenAfter = performance.now();
    expect(await store.setIfNewer(k, { version: 201, tag: 'd', payload: 'next' }, 60_000)).toBe(true);
    expect(await store.get(k)).toMatchObject({ version: 201, payload: 'next' });
    const ttl = Number(await redis().command('PTTL', k));
    // The new write's own 60 s, less the time since it was sent (however long a busy machine took).
    expect(ttl).toBeGreaterThanOrEqual(60_000 - Math.ceil(performance.now() - writtenAfter) - 1);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('deletes only an entry that still carries the tag', async () => {
    const store = storeOf();
    const k = key();
    await store.setIfNewer(k, { version: 1, tag: 'first', payload: 'x' }, 60_000);
    expect(await store.deleteIfTagged(k, 'other')).toBe(false);
    expect(await store.get(k)).toBeDefined();
    expect(await store.deleteIfTagged(k, 'first')).toBe(true);
    expect(await store.get(k)).toBeUndefined();
    expect(await store.deleteIfTagged(k, 'first')).toBe(false);
  });

  it('locks with SET NX PX: one owner at a time, released only by its owner, lapsing after its TTL', async () => {
    const store = storeOf();
    const k = key();
    expect(await store.acquireLock(k, 'one', 200)).toBe(true);
    expect(await store.acquireLock(k, 'two', 200)).toBe(false);
    expect(await store.releaseLock(k, 'two')).toBe(false);
    expect(await store.releaseLock(k, 'one')).toBe(true);
    expect(await store.acquireLock(k, 'two', 150)).toBe(true);
    // Taken by 'three' as soon as Redis lets the lock of 'two' lapse.
    await expect.poll(() => store.acquireLock(k, 'three', 60_000), { timeout: 60_000, interval: 20 }).toBe(true);
    // The lapsed owner's late release must not free the new owner's lock.
    expect(await store.releaseLock(k, 'two')).toBe(false);
    expect(await store.acquireLock(k, 'one', 60_000)).toBe(false);
  });

  it('reads anything that is not one of its entries as an entry without payload, which the module reads as a miss', async () => {
    const store = storeOf();
    const k = key();
    expect(await store.get(k)).toBeUndefined();
    await redis().command('SET', k, 'not an entry');
    expect(await store.get(k)).toEqual({ version: 0, tag: '', payload: '' });
    // A newer write replaces garbage: it has no version to defend.
    expect(await store.setIfNewer(k, { version: 5, tag: 't', payload: 'p' }, 1_000)).toBe(true);
  });

  it("reads and writes in the URL's database, its read connection and its client alike", async () => {
    const store = storeOf({ url: `${redis().url}/3` });
    const k = key();
    expect(await store.setIfNewer(k, { version: 1, tag: 'a', payload: 'in-3' }, 60_000)).toBe(true);
    expect(await store.get(k)).toEqual({ version: 1, tag: 'a', payload: 'in-3' });
    expect(await redis().command('EXISTS', k)).toBe(0);
    expect(await storeOf().get(k)).toBeUndefined();
  });

  it('works on an existing node-redis client, which it leaves open', async () => {
    const client = createClient({ url: redis().url });
    await client.connect();
    try {
      const store = new RedisEntryStore(clientChannel(client)!, MAX_ENTRY_BYTES);
      const k = key();
      expect(await store.setIfNewer(k, { version: 1, tag: 't', payload: randomBytes(8).toString('hex') }, 1_000)).toBe(
        true,
      );
      expect(await store.get(k)).toMatchObject({ version: 1, tag: 't' });
      await store.close();
      expect(client.isReady).toBe(true);
    } finally {
      client.destroy();
    }
  });

  it('fails fast while redis-server is down and recovers by itself once it is back', async () => {
    // A failure that waited for the connection to time out would take a minute.
    const store = storeOf({ connectTimeoutMs: 60_000 });
    const k = key();
    await store.setIfNewer(k, { version: 1, tag: 't', payload: 'p' }, 60_000);
    await redis().kill();
    try {
      const failure = await store.get(k).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      // The connection dropped or refused, whichever the client meets first; never the connect timeout running out.
      expect(failure).toBeInstanceOf(Error);
      expect(failure?.message).not.toMatch(/timeout/i);
    } finally {
      await redis().launch();
    }
    await expect
      .poll(
        () =>
          store.get(k).then(
            () => 'answered',
            () => 'failed',
          ),
        { timeout: 60_000, interval: 100 },
      )
      .toBe('answered');
  });
});
