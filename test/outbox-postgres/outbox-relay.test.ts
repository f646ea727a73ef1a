import { PGlite } from '@electric-sql/pglite';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedRow } from '../../lib/outbox/postgres/postgres.claim.js';
import { fromPglite } from '../../lib/outbox/postgres/pglite.executor.js';
import { insertOutboxRows } from '../../lib/outbox/postgres/postgres.insert.js';
import { countRows, listDeadLetters, retryDeadLetter } from '../../lib/outbox/postgres/postgres.operations.js';
import { PostgresRelay, type RelaySink } from '../../lib/outbox/postgres/postgres.relay.js';
import { migrate, outboxSchema } from '../../lib/outbox/postgres/postgres.schema.js';
import { eventually } from '../support/eventually.js';
import { messageRow, storedIds } from './outbox-rows.js';

const schema = outboxSchema();
let db: PGlite;
const executor = (): ReturnType<typeof fromPglite> => fromPglite(db);
let clock: FakeClock;

beforeAll(async () => {
  db = await PGlite.create();
  await migrate(executor(), schema);
});
afterAll(() => db.close());
beforeEach(async () => {
  clock = new FakeClock(1_800_000_000_000);
  await db.exec(`TRUNCATE ${schema.table('messages')}, ${schema.table('dead_letters')}`);
});

async function enqueue(...rows: ReturnType<typeof messageRow>[]): Promise<void> {
  await db.transaction((tx) => insertOutboxRows(executor(), tx, schema, rows, { now: clock.now() }));
}

/** A sink that records each row it is given and answers `answer` (sent by default). */
function recordingSink(answer: (row: ClaimedRow) => Awaited<ReturnType<RelaySink>> = () => 'done') {
  const seen: ClaimedRow[] = [];
  const sink: RelaySink = (row) => {
    seen.push(row);
    return Promise.resolve(answer(row));
  };
  return { seen, sink, keys: () => seen.map((row) => (row.message as { idempotencyKey: string }).idempotencyKey) };
}

function relay(sink: RelaySink, options: Partial<ConstructorParameters<typeof PostgresRelay>[0]> = {}): PostgresRelay {
  return new PostgresRelay({ executor: executor(), schema, sink, clock, leaseMs: 30_000, ...options });
}

/** Claims until a claim finds nothing; the number of claims that found rows. */
async function drain(relayer: PostgresRelay): Promise<number> {
  let claims = 0;
  while ((await relayer.relayOnce()) > 0) claims += 1;
  return claims;
}

describe('the relay, on PGlite', () => {
  it('hands a committed message to the sink once and deletes it; a rolled-back one never', async () => {
    await enqueue(messageRow('committed'));
    await db
      .transaction(async (tx) => {
        await insertOutboxRows(executor(), tx, schema, [messageRow('rolled-back')], { now: clock.now() });
        throw new Error('the order failed');
      })
      .catch(() => undefined);
    const { sink, keys, seen } = recordingSink();
    const relayer = relay(sink);
    await drain(relayer);
    expect(keys()).toEqual(['committed']);
    expect(seen[0]).toMatchObject({ id: 'default.committed', owner: 'default', attempts: 1 });
    expect(await storedIds(executor(), schema)).toEqual([]);
    expect(relayer.counts).toMatchObject({ claimed: 1, sent: 1, lost: 0 });
  });

  it('finds a commit nobody announced at its next poll, and one announced by notify() at once', async () => {
    const { sink, keys } = recordingSink();
    const relayer = relay(sink, { pollIntervalMs: 1_000 });
    await relayer.start();
    try {
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      await enqueue(messageRow('polled'));
      clock.advance(1_000);
      await eventually(() => expect(keys()).toEqual(['polled']));
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      await enqueue(messageRow('announced'));
      relayer.notify();
      await eventually(() => expect(keys()).toEqual(['polled', 'announced']));
    } finally {
      await relayer.stop();
    }
  });

  it('wakes on the commit itself when it listens and the insert notifies', async () => {
    const { sink, keys } = recordingSink();
    const relayer = relay(sink, { listen: true });
    await relayer.start();
    try {
      // Idle: its first claim found nothing and it waits for its poll.
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      await db.transaction((tx) =>
        insertOutboxRows(executor(), tx, schema, [messageRow('notified')], { now: clock.now(), notify: true }),
      );
      // No poll (the fake clock stands still) and no notify(): the notification woke it.
      await eventually(() => expect(keys()).toEqual(['notified']));
    } finally {
      await relayer.stop();
    }
  });

  it('makes a retried message due at its time and moves a given-up one to the dead letters', async () => {
    await enqueue(messageRow('flaky'), messageRow('refused'));
    let refusals = 0;
    const { sink, keys, seen } = recordingSink((row) =>
      row.id === 'default.refused' && refusals++ === 0
        ? { deadLetter: 'refused: HTTP 422' }
        : row.id === 'default.flaky' && row.attempts === 1
          ? { retryAt: clock.now() + 5_000, reason: 'transient: HTTP 503' }
          : 'done',
    );
    const relayer = relay(sink);
    await drain(relayer);
    expect(keys()).toEqual(['flaky', 'refused']);
    expect(await countRows(executor(), schema, clock.now())).toMatchObject({ waiting: 0, delayed: 1, deadLettered: 1 });
    const [dead] = await listDeadLetters(executor(), schema, 10);
    expect(dead).toMatchObject({ id: 'default.refused', reason: 'refused: HTTP 422', attempts: 1 });

    clock.advance(4_999);
    expect(await relayer.relayOnce()).toBe(0);
    clock.advance(1);
    await drain(relayer);
    expect(keys()).toEqual(['flaky', 'refused', 'flaky']);

    expect(await retryDeadLetter(executor(), schema, 'default.refused', clock.now())).toBe(true);
    await drain(relayer);
    expect(keys()).toEqual(['flaky', 'refused', 'flaky', 'refused']);
    // Back among the messages with its claims counted again.
    expect(seen[3]).toMatchObject({ id: 'default.refused', attempts: 1 });
    expect(await countRows(executor(), schema, clock.now())).toMatchObject({ waiting: 0, deadLettered: 0 });
  });

  it("takes one owner's next message within the first claim, whatever another owner's backlog", async () => {
    const backlog = Array.from({ length: 2_000 }, (_, i) => messageRow(`bulk-${i}`, { owner: 'tenant-a' }));
    await enqueue(...backlog);
    await enqueue(messageRow('urgent', { owner: 'tenant-b' }));
    const { sink, keys } = recordingSink();
    const relayer = relay(sink, { batchSize: 50 });
    expect(await relayer.relayOnce()).toBe(50);
    expect(keys()).toContain('urgent');
    // Each owner's first due row comes before anyone's second: the backlog's first, then the other owner's.
    expect(keys().slice(0, 2).sort()).toEqual(['bulk-0', 'urgent']);
  });

  it('sends one message of an order key at a time, lowest first, behind a retried one', async () => {
    await enqueue(
      messageRow('a1', { orderKey: 'order-7' }),
      messageRow('a2', { orderKey: 'order-7' }),
      messageRow('free'),
      messageRow('a3', { orderKey: 'order-7' }),
    );
    let failFirst = true;
    const { sink, keys } = recordingSink((row) => {
      if (row.id === 'default.a1' && failFirst) {
        failFirst = false;
        return { retryAt: clock.now() + 1_000, reason: 'transient: HTTP 503' };
      }
      return 'done';
    });
    const relayer = relay(sink);
    expect(await relayer.relayOnce()).toBe(2);
    expect(keys().sort()).toEqual(['a1', 'free']);
    // The head waits for its retry: nothing of its key moves meanwhile.
    expect(await relayer.relayOnce()).toBe(0);
    clock.advance(1_000);
    await drain(relayer);
    expect(keys().filter((key) => key.startsWith('a'))).toEqual(['a1', 'a1', 'a2', 'a3']);
  });

  it("lets another relay take rows whose lease ran out, and fences the first relay's late outcome", async () => {
    await enqueue(messageRow('slow'));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first relay's clock stands still (it renews nothing): as a relay that hung, or whose process is gone.
    const stalled = relay(
      async () => {
        await held;
        return 'done';
      },
      { clock: new FakeClock(clock.now()) },
    );
    const first = stalled.relayOnce();
    await eventually(async () => expect(await countRows(executor(), schema, clock.now())).toMatchObject({ active: 1 }));

    const second = recordingSink(() => ({ retryAt: clock.now() + 60_000, reason: 'transient: HTTP 503' }));
    const taker = relay(second.sink);
    expect(await taker.relayOnce()).toBe(0);
    clock.advance(30_000);
    expect(await taker.relayOnce()).toBe(1);
    expect(second.seen[0]).toMatchObject({ id: 'default.slow', attempts: 2 });

    // The first relay's "sent" comes after the second relay rescheduled the row: it must not delete it.
    release();
    await first;
    expect(stalled.counts).toMatchObject({ sent: 0, lost: 1 });
    expect(await storedIds(executor(), schema)).toEqual(['default.slow']);
    expect(await countRows(executor(), schema, clock.now())).toMatchObject({ delayed: 1 });
  });

  it('renews the lease of rows still in its sink, so no other relay takes them meanwhile', async () => {
    await enqueue(messageRow('long-send'));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sending = relay(async () => {
      await held;
      return 'done';
    });
    const first = sending.relayOnce();
    const other = recordingSink();
    const taker = relay(other.sink);
    for (let step = 0; step < 6; step++) {
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      // A third of the lease: the renewal's timer fires and moves the lease's end.
      clock.advance(10_000);
      await eventually(async () =>
        expect(await countRows(executor(), schema, clock.now())).toMatchObject({ active: 1, waiting: 0 }),
      );
      expect(await taker.relayOnce()).toBe(0);
    }
    release();
    await first;
    expect(other.seen).toEqual([]);
    expect(sending.counts).toMatchObject({ sent: 1, lost: 0 });
  });
});
