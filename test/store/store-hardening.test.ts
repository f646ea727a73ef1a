import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, type PlatformAuthDiagnosticsEvent } from 'nestjs-platform-auth';
import type { StoreLockOutcome } from '../../lib/platform-auth.observer.js';
import { RedisEntryStore } from '../../lib/store/token-store.redis.js';
import { OwnedRedisChannel } from '../../lib/store/redis.channel.js';
import { useCleanup } from '../support/cleanup.js';
import { startHoldingProxy } from '../support/holding-proxy.js';
import { useRedisServer } from '../support/redis-server.js';
import { startStorePlatform, storeReplica, type StorePlatform, storeOf } from '../support/store-fleet.js';

const redis = useRedisServer();
const track = useCleanup();

async function tokenKey({ shared }: StorePlatform): Promise<string> {
  const keys = (await redis().command('KEYS', `${storeOf(shared).keyPrefix}*:token`)) as string[];
  expect(keys).toHaveLength(1);
  return keys[0];
}

async function bytesSent(): Promise<number> {
  const stats = String(await redis().command('INFO', 'stats'));
  return Number(/^total_net_output_bytes:(\d+)/m.exec(stats)?.[1]);
}

/** How many SET commands Redis has run: a lock is taken with SET NX; tokens are written only after an exchange. */
async function setCommands(): Promise<number> {
  const stats = String(await redis().command('INFO', 'commandstats'));
  return Number(/^cmdstat_set:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
}

/** The lock outcomes published while `run` runs. */
async function lockOutcomes(run: () => Promise<unknown>): Promise<StoreLockOutcome[]> {
  const outcomes: StoreLockOutcome[] = [];
  const listener = (message: unknown) => {
    const event = message as PlatformAuthDiagnosticsEvent;
    if (event.event === 'store:lock') outcomes.push(event.outcome);
  };
  subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, listener);
  try {
    await run();
  } finally {
    unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, listener);
  }
  return outcomes;
}

describe('stored entries are size-bounded on read', () => {
  it('a 4 MB value planted under the token key is a miss that Redis never sends, shown as an unreadable entry', async () => {
    const setup = await startStorePlatform(track, { url: redis().url });
    const { shared, clock, platform } = setup;
    await (await storeReplica(track, shared, clock)).tokens.getAccessToken();
    const key = await tokenKey(setup);
    // A huge version too: no replica's "only if newer" write can replace it.
    await redis().command('SET', key, `9999999999999:planted:${'x'.repeat(4 * 1024 * 1024)}`, 'PX', '600000');

    const store = new RedisEntryStore(
      new OwnedRedisChannel({ mode: 'standalone', nodes: [{ host: '127.0.0.1', port: redis().port }] }, 1_000),
      132_096,
    );
    try {
      await store.get(`${key}-connect`);
      const before = await bytesSent();
      expect(await store.get(key)).toEqual({ version: 0, tag: '', payload: '' });
      // What was sent since: the short answer, and the reply to the INFO that measured `before`; not 4 MB.
      expect((await bytesSent()) - before).toBeLessThan(16 * 1024);
    } finally {
      await store.close();
    }

    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(platform.counters.exchanges.total).toBe(2);
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'unreadable-entry' });
    expect(logger.messages('warn')).toEqual([
      expect.stringMatching(/^The token store holds an entry this replica cannot open/),
    ]);

    // Once the planted value is gone, the replica's next write replaces nothing and its entries work again.
    await redis().command('DEL', key);
    clock.advance(601_000); // the token has expired
    await tokens.getAccessToken();
    expect(tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'standalone' });
  });
});

describe('the lock', () => {
  it('publishes store:lock acquired for the replica that exchanges and waited for the one that used its token', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, {
      url: redis().url,
      // Leases and waits far above any stall of a busy machine: the gate below decides the order, not a timer.
      operationTimeoutMs: 60_000,
      lockTtlMs: 120_000,
      waitTimeoutMs: 240_000,
    });
    const proxy = track(await startHoldingProxy(platform.url));
    const viaProxy = { ...shared, baseUrl: proxy.url, audience: platform.audience };
    const a = await storeReplica(track, viaProxy, clock);
    const b = await storeReplica(track, viaProxy, clock);
    const outcomes = await lockOutcomes(async () => {
      const exchange = proxy.holdNext();
      const first = a.tokens.getAccessToken();
      // A holds the lock: its token request is at the proxy, held there.
      await exchange.arrived;
      const lockAttempts = await setCommands();
      const second = b.tokens.getAccessToken();
      // B found the lock taken (its SET NX was refused) and waits for A's token.
      await expect.poll(setCommands, { timeout: 60_000, interval: 10 }).toBeGreaterThan(lockAttempts);
      exchange.release();
      expect(await second).toBe(await first);
    });
    expect(outcomes.sort()).toEqual(['acquired', 'waited']);
    expect(platform.counters.exchanges.total).toBe(1);
  });

  it('a lock held past its lease shows as lock-held (and store:lock timeout) until the lock works again', async () => {
    const { shared, clock } = await startStorePlatform(track, {
      url: redis().url,
      operationTimeoutMs: 1_000,
      lockTtlMs: 100,
      waitTimeoutMs: 300,
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    await tokens.getAccessToken();
    const lockKey = (await tokenKey({ shared } as StorePlatform)).replace(/:token$/, ':lock');
    // Someone who can write to Redis holds the lock with no expiry.
    await redis().command('SET', lockKey, `0:${randomUUID()}:`);
    clock.advance(601_000); // the token has expired, here and in the store

    const outcomes = await lockOutcomes(async () => {
      expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    });
    expect(outcomes).toEqual(['timeout']);
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'lock-held' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^No replica shared a token within 300 ms/)]);

    await redis().command('DEL', lockKey);
    clock.advance(601_000);
    expect(await lockOutcomes(() => tokens.getAccessToken())).toEqual(['acquired']);
    expect(tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'standalone' });
  });
});
