import { execFileSync } from 'node:child_process';
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

/** Stalls the loop until `done()`, asked every 10 ms; a hang guard of a minute fails the test instead. */
function stallUntil(done: () => boolean): void {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 60_000) throw new Error('redis-server did not run the command within a minute');
    stallEventLoop(10);
  }
}

/** How many clients Redis holds in a blocking command, asked through redis-cli: it answers while this loop stalls. */
function blockedClients(): number {
  const info = execFileSync('redis-cli', ['-u', redis().url, 'INFO', 'clients'], { encoding: 'utf8' });
  return Number(/blocked_clients:(\d+)/.exec(info)?.[1]);
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
    // Redis holds the answer for 1.5 s (a BLPOP on an empty list), so nothing arrives before the loop stalls.
    const operation = boundedStoreOperation(() => client.sendCommand(['BLPOP', `empty:${process.pid}`, '1.5']), 1_000);
    // The command is on the server once it blocks there (asked from another process; the loop runs meanwhile).
    await expect.poll(() => blockedClients(), { timeout: 60_000 }).toBe(1);
    // From the check phase, where a stall is followed by a new turn that runs expired timers first.
    await written();
    // The loop now stalls until the server has answered: past the 1 s bound, with the answer on the socket. Node
    // runs expired timers before it reads sockets.
    stallUntil(() => blockedClients() === 0);
    stallEventLoop(50);
    await expect(operation).resolves.toBeNull();
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
