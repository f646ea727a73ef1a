import { describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { useDeliveryScenario } from './outbox-delivery.js';

// Every write reaches the disk before a node answers: the node restarted below comes back with what it acknowledged.
const cluster = useRedisCluster(['--appendonly', 'yes', '--appendfsync', 'always']);
const deliver = useDeliveryScenario();

describe('the outbox on Redis Cluster (3 masters)', () => {
  it("keeps each queue's keys in one slot, and delivers every message once through a worker killed and the node of that slot restarted", async () => {
    const { messages, duplicates } = await deliver({ clusterNodes: cluster().urls }, async () => {
      // The queue's keys carry its name as their hash tag: one node holds them all.
      const owner = await cluster().ownerOf('bull:{outbox-delivery-');
      const others = cluster().nodes.filter((node) => node !== owner);
      for (const node of others) expect(await node.command('KEYS', 'bull:{outbox-delivery-*')).toEqual([]);
      await owner.kill();
      await cluster().untilState('fail');
      await owner.launch();
      await cluster().untilState('ok');
    });
    expect(messages).toBe(41);
    console.log(`outbox on Cluster: ${messages} messages, ${duplicates} duplicates answered by the journal`);
  });
});
