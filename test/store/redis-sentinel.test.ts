import { randomBytes } from 'node:crypto';
import { createSentinel } from 'redis';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../support/cleanup.js';
import { SENTINEL_MASTER, useRedisSentinel } from '../support/redis-sentinel.js';
import {
  expectOneExchangePerLifetime,
  useStoreFleets,
  startStorePlatform,
  storeReplica,
  tokensOf,
  untilSharedAgain,
  withStore,
} from '../support/store-fleet.js';

const startStoreFleet = useStoreFleets();
const sentinel = useRedisSentinel();
const track = useCleanup();

const sentinelOptions = () => ({
  sentinel: { nodes: [sentinel().sentinel.address], masterName: SENTINEL_MASTER },
});

// The last test fails the master over: the ones before it need the set-up as it started.
describe('Redis Sentinel (a master, a replica, a sentinel)', () => {
  it('a fleet of 3 processes given the sentinel makes 1 exchange cold and 1 per renewal', async () => {
    const setup = await startStorePlatform(track, sentinelOptions());
    const fleet = await startStoreFleet(track, setup, 3, 2);
    await expectOneExchangePerLifetime(fleet, setup.platform);
    expect((await fleet.logs()).filter((line) => line.level !== 'log')).toEqual([]);
  });

  it('takes an ACL user of least privilege (+get +set +del +eval) for the master from the username and password', async () => {
    const password = randomBytes(12).toString('hex');
    // ACL users are not replicated: a replica that may become master needs the user too.
    for (const node of [sentinel().master, sentinel().replica]) {
      await node.command(
        'ACL',
        'SETUSER',
        'platform-auth',
        'on',
        `>${password}`,
        'resetkeys',
        '~platform-auth:*',
        'resetchannels',
        '-@all',
        '+get',
        '+set',
        '+del',
        '+eval',
      );
    }
    const { shared, clock, platform } = await startStorePlatform(track, {
      ...sentinelOptions(),
      username: 'platform-auth',
      password: password,
      keyPrefix: 'platform-auth:',
    });
    const a = await storeReplica(track, shared, clock);
    const b = await storeReplica(track, shared, clock);
    expect(await a.tokens.getAccessToken()).toBe(await b.tokens.getAccessToken());
    expect(platform.counters.exchanges.total).toBe(1);
    expect(a.tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'sentinel' });
  });

  it('a standalone URL to the replica: degraded with READONLY', async () => {
    const { shared, clock } = await startStorePlatform(track, { url: sentinel().replica.url });
    const { tokens, logger } = await storeReplica(track, shared, clock);
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'READONLY' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(READONLY\);/)]);
  });

  it('tokenStore.client takes a createSentinel client as it is', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, {});
    const client = createSentinel({
      name: SENTINEL_MASTER,
      sentinelRootNodes: [{ host: '127.0.0.1', port: sentinel().sentinel.port }],
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const options = withStore(shared, { client });
      const a = await storeReplica(track, options, clock);
      const b = await storeReplica(track, options, clock);
      expect(await a.tokens.getAccessToken()).toBe(await b.tokens.getAccessToken());
      expect(platform.counters.exchanges.total).toBe(1);
    } finally {
      await client.destroy();
    }
  });

  it('loses no call while the master fails over, and shares again through the new master', async () => {
    const setup = await startStorePlatform(track, sentinelOptions());
    const { platform } = setup;
    const fleet = await startStoreFleet(track, setup, 2, 2);
    tokensOf(await fleet.getAll());
    expect(platform.counters.exchanges.total).toBe(1);

    await sentinel().failOver();
    await fleet.advance(601_000); // every cached token has expired
    expect(tokensOf(await fleet.getAll())).toHaveLength(4);
    expect(await untilSharedAgain(fleet, platform)).toBe(1);

    // An instance whose client learnt of the new master before it asked (the sentinel announces it) never noticed;
    // every instance that did says so once, and once more when the store answers again.
    const lines = await fleet.logs();
    const warnings = lines.filter((line) => line.level === 'warn').map((line) => line.message);
    expect(warnings.length).toBeLessThanOrEqual(4);
    // A connection error's code, or the bound on an operation while the client waits for the new master.
    for (const warning of warnings)
      expect(warning).toMatch(/^Token store unavailable \((\w+|no answer within 1000 ms)\);/);
    expect(lines.filter((line) => /Token store answers again/.test(line.message))).toHaveLength(warnings.length);
  });
});
