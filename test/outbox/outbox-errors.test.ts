import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlatformOutboxError, type PlatformOutbox } from 'nestjs-platform-auth/outbox';
import { CapturingLogger } from '../support/capturing-logger.js';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

/** Numbers in [0, 1) from `seed`: the instants are random, and a failing run says its seed to replay it. */
function random(seed: number, count: number): () => number {
  const drawn = fc.sample(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { seed, numRuns: count });
  let next = 0;
  return () => drawn[next++ % count];
}

/** Every call the outbox offers that talks to Redis, one of them picked at random. */
function someCall(outbox: PlatformOutbox, n: number, pick: number): Promise<unknown> {
  const calls = [
    () => outbox.enqueue({ method: 'POST', path: '/api/messages', body: { n }, idempotencyKey: `call-${n}` }),
    () => outbox.enqueue({ method: 'POST', path: '/api/messages', body: { n } }),
    () => outbox.status(),
    () => outbox.deadLetters(),
    () => outbox.failures(),
    () => outbox.retry(`no-such-${n}`),
  ];
  return calls[Math.floor(pick * calls.length)]();
}

describe('PlatformOutbox: typed errors only, whenever Redis dies', () => {
  it('rejects every call in flight with a PlatformOutboxError naming a reason, the driver’s error as its cause', async () => {
    const seed = Number(process.env.OUTBOX_ERRORS_SEED ?? Date.now() % 1_000_000);
    const next = random(seed, 1_000);
    const logger = new CapturingLogger();
    const f = await start(redis().url, { logger, enqueueTimeoutMs: 1_000, worker: { concurrency: 4 } });
    const rejections: unknown[] = [];
    let settled = 0;
    for (let round = 0; round < 8; round += 1) {
      const calls = 40;
      // Redis dies after a random number of the round's calls have settled: between commands, mid-script, or
      // before any was sent.
      const killAfter = Math.floor(next() * calls);
      let done = 0;
      let killed: Promise<void> | undefined;
      const results = await Promise.allSettled(
        Array.from({ length: calls }, (_, i) =>
          someCall(f.outbox, round * calls + i, next()).finally(() => {
            done += 1;
            if (done === killAfter) killed = redis().kill();
          }),
        ),
      );
      await (killed ?? redis().kill());
      settled += results.length;
      for (const result of results) if (result.status === 'rejected') rejections.push(result.reason);
      await redis().launch();
      await eventually(async () => expect(await f.outbox.status()).toMatchObject({ queueName: f.queueName }));
    }

    console.log(`typed errors (seed ${seed}): ${rejections.length} of ${settled} calls rejected`);
    expect(rejections.length).toBeGreaterThan(0);
    const untyped = rejections.filter((error) => !(error instanceof PlatformOutboxError));
    expect(untyped.map(String), `seed ${seed}`).toEqual([]);
    const typed = rejections as PlatformOutboxError[];
    for (const error of typed) {
      // `not_found`: retry() of an id no job has, answered by a Redis that was up.
      expect(['unavailable', 'not_found'], error.message).toContain(error.reason);
      if (error.reason !== 'unavailable') continue;
      // The bound's own error says what ran out; any other carries what the driver said.
      if (!/did not answer within 1000 ms/.test(error.message)) expect(error.cause, error.message).toBeDefined();
    }
  });
});
