import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { boundedStoreOperation, StoreUnavailable } from '../../lib/store/store-operation.bounded.js';
import { useCleanup } from '../support/cleanup.js';
import { useRedisServer } from '../support/redis-server.js';

const redis = useRedisServer();
const track = useCleanup();

/** Blocks this thread (the event loop with it) for `ms` without spinning: a process the machine did not schedule. */
function stallEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

async function connectedClient() {
  const client = createClient({ url: redis().url });
  await client.connect();
  track({ close: async () => client.destroy() });
  return client;
}

/** One turn of the loop, so the command written by the client's next tick is on its way to Redis. */
const written = () => new Promise((resolve) => setImmediate(resolve));

describe('a bounded store operation after the event loop stalled', () => {
  it('takes the answer that arrived during the stall instead of calling the store unavailable', async () => {
    const client = await connectedClient();
    const operation = boundedStoreOperation(() => client.sendCommand(['PING']), 20);
    await written();
    // The stall outlasts the bound many times over; Redis answers within it, so the reply waits on the socket while
    // the timeout has expired too. Node runs expired timers before it reads sockets.
    stallEventLoop(400);
    await expect(operation).resolves.toBe('PONG');
  });

  it('still times out when the store does not answer', async () => {
    const client = await connectedClient();
    // The server blocks this connection for longer than the bound: no answer, whatever the loop does.
    const operation = boundedStoreOperation(() => client.sendCommand(['BLPOP', 'no-such-list', '2']), 20);
    await written();
    stallEventLoop(100);
    const error: unknown = await operation.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect((error as StoreUnavailable).problem).toBe('timeout');
  });
});
