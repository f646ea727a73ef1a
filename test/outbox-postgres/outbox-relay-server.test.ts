import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { FakeClock } from 'nestjs-platform-auth/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedRow } from '../../lib/outbox/postgres/postgres.claim.js';
import { fromPg } from '../../lib/outbox/postgres/pg.executor.js';
import { insertOutboxRows } from '../../lib/outbox/postgres/postgres.insert.js';
import { countRows } from '../../lib/outbox/postgres/postgres.operations.js';
import { PostgresRelay, type RelaySink } from '../../lib/outbox/postgres/postgres.relay.js';
import { migrate, outboxSchema, type OutboxSchema } from '../../lib/outbox/postgres/postgres.schema.js';
import { eventually } from '../support/eventually.js';
import { usePostgresServer } from '../support/postgres-server.js';
import { messageRow, storedIds } from './outbox-rows.js';

const server = usePostgresServer();
const pools: pg.Pool[] = [];

function pool(): pg.Pool {
  const opened = new pg.Pool({ connectionString: server().url, max: 20 });
  // An idle client's connection dropped by a restart of the server: the pool replaces it.
  opened.on('error', () => undefined);
  pools.push(opened);
  return opened;
}

afterAll(async () => {
  await Promise.all(pools.map((opened) => opened.end()));
});

async function freshSchema(name: string): Promise<OutboxSchema> {
  const schema = outboxSchema(name);
  await migrate(fromPg(pool()), schema);
  return schema;
}

/** Commits `rows` in one transaction of a client of `on`. */
async function commit(on: pg.Pool, schema: OutboxSchema, rows: ReturnType<typeof messageRow>[], now: number) {
  const client = await on.connect();
  try {
    await client.query('BEGIN');
    await insertOutboxRows(fromPg(on), client, schema, rows, { now });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

function recordingSink(): { sink: RelaySink; seen: ClaimedRow[] } {
  const seen: ClaimedRow[] = [];
  return {
    seen,
    sink: (row) => {
      seen.push(row);
      return Promise.resolve('done');
    },
  };
}

const keyOf = (row: ClaimedRow): string => (row.message as { idempotencyKey: string }).idempotencyKey;

describe('the relay on a PostgreSQL server', () => {
  beforeAll(() => migrate(fromPg(pool()), outboxSchema()));

  it('creates the schema once when several processes start at once', async () => {
    const executors = Array.from({ length: 6 }, () => fromPg(pool()));
    await Promise.all(executors.map((executor) => migrate(executor, outboxSchema('outbox_started_at_once'))));
    const tables = await pool().query(
      "SELECT count(*)::integer AS n FROM pg_tables WHERE schemaname = 'outbox_started_at_once'",
    );
    expect(tables.rows[0]).toEqual({ n: 2 });
  });

  it("adds one statement to the caller's transaction for a batch, order keys and notification included", async () => {
    const schema = await freshSchema('outbox_one_statement');
    const on = pool();
    const client = await on.connect();
    const statements: string[] = [];
    const counted = {
      query: (sql: string, parameters?: readonly (string | null)[]) => {
        statements.push(sql);
        return client.query(sql, parameters as (string | null)[]);
      },
      getTransactionStatus: () => client.getTransactionStatus(),
    };
    try {
      await client.query('BEGIN');
      const rows = Array.from({ length: 50 }, (_, i) => messageRow(`b-${i}`, { orderKey: `order-${i % 5}` }));
      await insertOutboxRows(fromPg(on), counted, schema, rows, { now: 1, notify: true });
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(statements).toHaveLength(1);
    expect(await storedIds(fromPg(on), schema)).toHaveLength(50);
  });

  it('wakes a listening relay with the commit itself: no call, no poll', async () => {
    const schema = await freshSchema('outbox_listen');
    const clock = new FakeClock(1_800_000_000_000);
    const on = pool();
    const { sink, seen } = recordingSink();
    const relay = new PostgresRelay({ executor: fromPg(on), schema, sink, clock, listen: true });
    await relay.start();
    try {
      // Idle: its first claim found nothing and it waits for its poll.
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      const client = await on.connect();
      try {
        await client.query('BEGIN');
        await insertOutboxRows(fromPg(on), client, schema, [messageRow('heard')], { now: clock.now(), notify: true });
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      // The fake clock stands still, so the poll never comes: the notification woke the relay.
      await eventually(() => expect(seen.map(keyOf)).toEqual(['heard']));
    } finally {
      await relay.stop();
    }
  });

  it('never gives one row to two of several relays claiming at once', async () => {
    const schema = await freshSchema('outbox_several');
    const clock = new FakeClock(1_800_000_000_000);
    const rows = Array.from({ length: 1_200 }, (_, i) =>
      messageRow(`m-${i}`, { owner: `tenant-${i % 5}`, ...(i % 3 === 0 && { orderKey: `order-${i % 7}` }) }),
    );
    const { sink, seen } = recordingSink();
    const relays = Array.from(
      { length: 4 },
      () => new PostgresRelay({ executor: fromPg(pool()), schema, sink, clock, batchSize: 25 }),
    );
    await Promise.all(relays.map((relay) => relay.start()));
    try {
      for (let i = 0; i < rows.length; i += 100) {
        await commit(pool(), schema, rows.slice(i, i + 100), clock.now());
        for (const relay of relays) relay.notify();
      }
      await eventually(() => expect(seen.length).toBeGreaterThanOrEqual(rows.length));
    } finally {
      await Promise.all(relays.map((relay) => relay.stop()));
    }
    expect(new Set(seen.map((row) => row.id)).size).toBe(rows.length);
    expect(seen).toHaveLength(rows.length);
    expect(relays.filter((relay) => relay.counts.claimed > 0).length).toBeGreaterThan(1);
    expect(relays.reduce((sum, relay) => sum + relay.counts.sent, 0)).toBe(rows.length);
    expect(await storedIds(fromPg(pool()), schema)).toEqual([]);
    // Each owner's order key's messages went out in the order they were committed.
    const keys = new Set(seen.filter((row) => row.orderKey).map((row) => `${row.owner}/${row.orderKey}`));
    expect(keys.size).toBe(35);
    for (const key of keys) {
      const sent = seen.filter((row) => `${row.owner}/${row.orderKey}` === key).map((row) => Number(row.seq));
      expect(sent).toEqual([...sent].sort((a, b) => a - b));
    }
  });

  it("sends one order key's messages in the order their overlapping transactions committed", async () => {
    const schema = await freshSchema('outbox_ordered');
    const clock = new FakeClock(1_800_000_000_000);
    const on = pool();
    const executor = fromPg(on);
    const producers = 12;
    const gates = Array.from({ length: producers }, () => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      return { opened, open };
    });
    const enqueued = new Set<number>();
    const committed: number[] = [];
    // Every producer opens its transaction and writes its own data first: all twelve overlap.
    const clients = await Promise.all(Array.from({ length: producers }, () => on.connect()));
    await Promise.all(clients.map((client) => client.query('BEGIN')));
    await Promise.all(clients.map((client, i) => client.query('SELECT $1::integer AS order_line', [i])));
    const running = clients.map(async (client, i) => {
      await insertOutboxRows(executor, client, schema, [messageRow(`p-${i}`, { orderKey: 'order-1' })], {
        now: clock.now(),
      });
      enqueued.add(i);
      await gates[i].opened;
      await client.query('COMMIT');
      committed.push(i);
      client.release();
    });
    // Commits in a scripted order: of the producers whose message is written and not yet committed, the one that
    // comes first in the script commits next. Without the order key's lock, all twelve would write first and commit
    // in the script's order, the reverse of their sequence numbers.
    const script = Array.from({ length: producers }, (_, i) => (i * 5 + 3) % producers).reverse();
    while (committed.length < producers) {
      const ready = await eventually(() => {
        const waiting = script.filter((i) => enqueued.has(i) && !committed.includes(i));
        expect(waiting.length).toBeGreaterThan(0);
        return waiting[0];
      });
      const before = committed.length;
      gates[ready].open();
      await eventually(() => expect(committed.length).toBe(before + 1));
    }
    await Promise.all(running);

    const { sink, seen } = recordingSink();
    const relay = new PostgresRelay({ executor, schema, sink, clock });
    while ((await relay.relayOnce()) > 0);
    expect(seen.map((row) => Number(keyOf(row).slice(2)))).toEqual(committed);
  });

  it("re-claims a killed relay process's rows once its lease has run out, and only then", async () => {
    const schema = await freshSchema('outbox_killed');
    await commit(
      pool(),
      schema,
      Array.from({ length: 10 }, (_, i) => messageRow(`k-${i}`)),
      Date.now(),
    );
    const leaseMs = 600_000;
    const child = fork(
      fileURLToPath(new URL('./outbox-relay.child.mjs', import.meta.url)),
      [server().url, schema.name, String(leaseMs)],
      { stdio: 'ignore' },
    );
    const [message] = (await once(child, 'message')) as [{ claimed: string[] }];
    expect(message.claimed).toHaveLength(10);
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;

    const clock = new FakeClock(Date.now());
    const { sink, seen } = recordingSink();
    const relay = new PostgresRelay({ executor: fromPg(pool()), schema, sink, clock });
    expect(await relay.relayOnce()).toBe(0);
    expect(await countRows(fromPg(pool()), schema, clock.now())).toMatchObject({ active: 10 });
    clock.advance(leaseMs);
    while ((await relay.relayOnce()) > 0);
    expect(seen.map((row) => row.id).sort()).toEqual([...message.claimed].sort());
    expect(seen.every((row) => row.attempts === 2)).toBe(true);
    expect(await storedIds(fromPg(pool()), schema)).toEqual([]);
  });

  it('keeps relaying across a restart of the database, losing nothing committed', async () => {
    const schema = await freshSchema('outbox_restart');
    const clock = new FakeClock(1_800_000_000_000);
    const on = pool();
    const errors: string[] = [];
    const { sink, seen } = recordingSink();
    const relay = new PostgresRelay({
      executor: fromPg(on),
      schema,
      sink,
      clock,
      pollIntervalMs: 1_000,
      onError: (_, step) => errors.push(step),
    });
    await relay.start();
    try {
      await commit(on, schema, [messageRow('before')], clock.now());
      relay.notify();
      await eventually(() => expect(seen.map(keyOf)).toEqual(['before']));

      await server().kill();
      await eventually(() => expect(clock.pendingTimers).toBe(1));
      clock.advance(1_000);
      await eventually(() => expect(errors).toContain('claim'));
      await server().launch();
      await eventually(() => expect(clock.pendingTimers).toBe(1));

      await commit(on, schema, [messageRow('after')], clock.now());
      clock.advance(1_000);
      await eventually(() => expect(seen.map(keyOf)).toEqual(['before', 'after']));
    } finally {
      await relay.stop();
    }
    expect(await storedIds(fromPg(on), schema)).toEqual([]);
  });
});
