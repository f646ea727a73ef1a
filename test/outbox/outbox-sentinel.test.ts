import { describe, expect, it } from 'vitest';
import { SENTINEL_MASTER, useRedisSentinel } from '../support/redis-sentinel.js';
import { until } from '../support/redis-server.js';
import { useDeliveryScenario } from './outbox-delivery.js';

const sentinel = useRedisSentinel();
const deliver = useDeliveryScenario();

/** The replication offset a server reports (`master_repl_offset`). */
async function offsetOf(server: { command(...args: string[]): Promise<unknown> }): Promise<number> {
  return Number(/master_repl_offset:(\d+)/.exec(String(await server.command('INFO', 'replication')))?.[1]);
}

describe('the outbox on Redis Sentinel (a master, a replica, a sentinel)', () => {
  it('delivers every message once through a worker killed and a failover to the replica', async () => {
    const nodes = [sentinel().sentinel.address];
    const { messages, duplicates } = await deliver({ sentinel: { nodes, masterName: SENTINEL_MASTER } }, async () => {
      const { master, replica } = sentinel();
      // Replication is asynchronous: what the master acknowledged and the replica has not yet got is lost in a
      // failover, whoever wrote it. Writes held, the replica catches up first, then the master dies.
      await master.command('CLIENT', 'PAUSE', '60000', 'WRITE');
      await until(async () => (await offsetOf(replica)) === (await offsetOf(master)), 'the replica has every write');
      await sentinel().failOver();
    });
    expect(messages).toBe(41);
    console.log(`outbox on Sentinel: ${messages} messages, ${duplicates} duplicates answered by the journal`);
  });
});
