import { randomBytes } from 'node:crypto';
import { createCluster } from 'redis';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../support/cleanup.js';
import { useRedisCluster } from '../support/redis-cluster.js';
import {
  expectOneExchangePerLifetime,
  useStoreFleets,
  startStorePlatform,
  storeReplica,
  tokensOf,
  untilSharedAgain,
  storeOf,
  withStore,
} from '../support/store-fleet.js';

const startStoreFleet = useStoreFleets();
const cluster = useRedisCluster();
const track = useCleanup();

describe('Redis Cluster (3 masters)', () => {
  it('a fleet of 3 processes given the seed nodes makes 1 exchange cold and 1 per renewal', async () => {
    const setup = await startStorePlatform(track, { clusterNodes: cluster().urls });
    const fleet = await startStoreFleet(track, setup, 3, 2);
    await expectOneExchangePerLifetime(fleet, setup.platform);
    expect((await fleet.logs()).filter((line) => line.level !== 'log')).toEqual([]);
  });

  it("loses no call while the slot's owner is down, names the error, and shares again once it is back", async () => {
    const setup = await startStorePlatform(track, { clusterNodes: cluster().urls });
    const { platform, shared, clock } = setup;
    const fleet = await startStoreFleet(track, setup, 2, 2);
    tokensOf(await fleet.getAll());
    expect(platform.counters.exchanges.total).toBe(1);
    const owner = await cluster().ownerOf(storeOf(shared).keyPrefix!);
    const survivor = cluster().nodes.find((node) => node !== owner)!;

    await owner.kill();
    try {
      await fleet.advance(601_000); // every cached token has expired
      expect(tokensOf(await fleet.getAll())).toHaveLength(4);
      await cluster().untilState('fail');
      // A replica pointed at a surviving node is told the cluster is down.
      const pointed = await storeReplica(
        track,
        withStore(shared, { clusterNodes: undefined, url: survivor.url }),
        clock,
      );
      expect(await pointed.tokens.getAccessToken()).toEqual(expect.any(String));
      expect(pointed.tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'CLUSTERDOWN' });
    } finally {
      await owner.launch();
    }
    await cluster().untilState('ok');
    expect(await untilSharedAgain(fleet, platform)).toBe(1);

    const lines = await fleet.logs();
    const warnings = lines.filter((line) => line.level === 'warn').map((line) => line.message);
    expect(warnings).toHaveLength(4);
    for (const warning of warnings) {
      expect(warning).toMatch(/^Token store unavailable \(\w+\); exchanging tokens locally/);
      expect(warning).not.toContain('127.0.0.1');
    }
    expect(lines.filter((line) => /Token store answers again/.test(line.message))).toHaveLength(4);
  });

  it('takes an ACL user of least privilege (+get +set +del +eval, and +cluster|slots) from the username and password', async () => {
    const password = randomBytes(12).toString('hex');
    for (const node of cluster().nodes) {
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
        '+cluster|slots',
      );
    }
    const { shared, clock, platform } = await startStorePlatform(track, {
      clusterNodes: cluster().urls,
      username: 'platform-auth',
      password: password,
      keyPrefix: 'platform-auth:',
    });
    const a = await storeReplica(track, shared, clock);
    const b = await storeReplica(track, shared, clock);
    expect(await a.tokens.getAccessToken()).toBe(await b.tokens.getAccessToken());
    expect(platform.counters.exchanges.total).toBe(1);
    expect(a.tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'cluster' });
  });

  it('a standalone URL to a node that does not own the slot: degraded with MOVED', async () => {
    const { shared, clock } = await startStorePlatform(track, { clusterNodes: cluster().urls });
    await (await storeReplica(track, shared, clock)).tokens.getAccessToken();
    const owner = await cluster().ownerOf(storeOf(shared).keyPrefix!);
    const other = cluster().nodes.find((node) => node !== owner)!;
    const { tokens, logger } = await storeReplica(
      track,
      withStore(shared, { clusterNodes: undefined, url: other.url }),
      clock,
    );
    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', mode: 'standalone', problem: 'MOVED' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(MOVED\);/)]);
  });

  it('tokenStore.client takes a createCluster client as it is', async () => {
    const { shared, clock, platform } = await startStorePlatform(track, {});
    const client = createCluster({ rootNodes: cluster().urls.map((url) => ({ url })) });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const options = withStore(shared, { client });
      const a = await storeReplica(track, options, clock);
      const b = await storeReplica(track, options, clock);
      expect(await a.tokens.getAccessToken()).toBe(await b.tokens.getAccessToken());
      expect(platform.counters.exchanges.total).toBe(1);
      expect(a.tokens.status().sharedStore).toEqual({ state: 'shared', mode: 'provided' });
    } finally {
      client.destroy();
    }
  });
});
