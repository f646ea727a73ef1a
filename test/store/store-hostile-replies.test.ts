import { createServer, type AddressInfo, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../support/cleanup.js';
import { startStorePlatform, storeReplica } from '../support/store-fleet.js';

const track = useCleanup();

const MB = 1024 * 1024;
/** What a hostile server answers to each read: far over the store's bound on an entry (129 KiB). */
const HOSTILE_BULK = Buffer.concat([Buffer.from(`$${64 * MB}\r\n`), Buffer.alloc(64 * MB, 'x'), Buffer.from('\r\n')]);

/** The arguments of each complete RESP command at the start of `buffer`, and what is left of it. */
function parseCommands(buffer: Buffer): { commands: string[][]; rest: Buffer } {
  const commands: string[][] = [];
  let offset = 0;
  const line = (from: number) => {
    const end = buffer.indexOf('\r\n', from);
    return end === -1 ? undefined : { text: buffer.toString('latin1', from, end), next: end + 2 };
  };
  for (;;) {
    const header = line(offset);
    if (!header || header.text[0] !== '*') break;
    const args: string[] = [];
    let at = header.next;
    for (let index = 0; index < Number(header.text.slice(1)); index++) {
      const size = line(at);
      if (!size) return { commands, rest: buffer.subarray(offset) };
      const length = Number(size.text.slice(1));
      if (buffer.length < size.next + length + 2) return { commands, rest: buffer.subarray(offset) };
      args.push(buffer.toString('utf8', size.next, size.next + length));
      at = size.next + length + 2;
    }
    commands.push(args);
    offset = at;
  }
  return { commands, rest: buffer.subarray(offset) };
}

/**
 * A server that speaks enough RESP for node-redis: it accepts the handshake, refuses every lock (as if another
 * replica held it), and answers every read of an entry (the bounded-read script) with `answer`.
 */
async function hostileRedis(answer: Buffer) {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (data) => {
      const { commands, rest } = parseCommands(Buffer.concat([pending, data]));
      pending = rest;
      for (const [name, ...args] of commands) {
        const command = name.toUpperCase();
        if (command === 'SET' && args.some((arg) => arg.toUpperCase() === 'NX')) socket.write('$-1\r\n');
        else if (command === 'EVAL' && args[0].includes("redis.call('GET'") && args[0].includes('#current >')) {
          hostile.reads += 1;
          socket.write(answer);
        } else if (command === 'EVAL') socket.write(':0\r\n');
        else socket.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const hostile = {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reads: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return hostile;
}

/** The highest resident set size seen while `run` runs, sampled every few milliseconds, and the longest stall. */
async function measured<T>(run: () => Promise<T>): Promise<{ result: T; rssGrowthMb: number; maxStallMs: number }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  delay.enable();
  try {
    const result = await run();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, rssGrowthMb: (peak - before) / MB, maxStallMs: delay.max / 1e6 };
  } finally {
    delay.disable();
    clearInterval(sampler);
  }
}

describe('a hostile Redis server', () => {
  // Generous bounds on one operation and on the wait, so only a reply refused as it arrives ends the wait early.
  const timing = { operationTimeoutMs: 20_000, lockTtlMs: 1_000, waitTimeoutMs: 3_000 };

  it('that answers every read with 64 MB costs a replica one reply: the store is left alone, the call gets a token', async () => {
    const hostile = track(await hostileRedis(HOSTILE_BULK));
    const { shared, clock, platform } = await startStorePlatform(track, {
      url: hostile.url,
      ...timing,
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);

    const { result, rssGrowthMb, maxStallMs } = await measured(() => tokens.getAccessToken());
    // A wait that reads the whole reply over and over grew by hundreds of MB and stalled for about a second here.
    expect(rssGrowthMb, 'resident memory growth, MB').toBeLessThanOrEqual(64);
    expect(maxStallMs, 'longest event-loop stall, ms').toBeLessThan(500);
    expect(hostile.reads).toBe(1);
    expect(result).toEqual(expect.any(String));
    expect(platform.counters.exchanges.total).toBe(1);
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'REPLY_TOO_LARGE' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(REPLY_TOO_LARGE\)/)]);
  });

  it.each([
    ['an integer', ':1\r\n'],
    ['an array', '*1\r\n$3\r\nabc\r\n'],
  ])('that answers a read with %s ends the wait at once', async (_kind, reply) => {
    const hostile = track(await hostileRedis(Buffer.from(reply)));
    const { shared, clock, platform } = await startStorePlatform(track, {
      url: hostile.url,
      ...timing,
    });
    const { tokens, logger } = await storeReplica(track, shared, clock);

    expect(await tokens.getAccessToken()).toEqual(expect.any(String));
    expect(platform.counters.exchanges.total).toBe(1);
    expect(hostile.reads).toBe(1);
    expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', problem: 'UNEXPECTED_REPLY' });
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/^Token store unavailable \(UNEXPECTED_REPLY\)/)]);
  });

  it.each([
    ['a reply over the bound', Buffer.from(`$${MB}\r\n${'x'.repeat(MB)}\r\n`), 'REPLY_TOO_LARGE'],
    ['an integer', Buffer.from(':1\r\n'), 'UNEXPECTED_REPLY'],
  ])('through a client passed in, %s is a store failure once it arrived', async (_kind, answer, code) => {
    const hostile = track(await hostileRedis(answer));
    const client = createClient({ url: hostile.url });
    await client.connect();
    try {
      const { shared, clock, platform } = await startStorePlatform(track, { client, ...timing });
      const { tokens } = await storeReplica(track, shared, clock);
      expect(await tokens.getAccessToken()).toEqual(expect.any(String));
      expect(platform.counters.exchanges.total).toBe(1);
      expect(hostile.reads).toBe(1);
      expect(tokens.status().sharedStore).toMatchObject({ state: 'degraded', mode: 'provided', problem: code });
    } finally {
      client.destroy();
    }
  });
});
