import { describe, expect, it } from 'vitest';
import { useRedisServer } from '../support/redis-server.js';
import { useDeliveryScenario } from './outbox-delivery.js';

// Every write reaches the disk before Redis answers: a job BullMQ acknowledged survives the restart below.
const redis = useRedisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
const deliver = useDeliveryScenario();

describe('the outbox across processes, on one Redis', () => {
  it('delivers every message exactly once through a worker killed mid-send and a Redis restart', async () => {
    const { messages, duplicates } = await deliver({ url: redis().url }, async () => {
      await redis().kill();
      await redis().launch();
    });
    expect(messages).toBe(41);
    console.log(`outbox across processes: ${messages} messages, ${duplicates} duplicates answered by the journal`);
  });
});
