// The relay's claim → sink → settle loop against a PostgreSQL server, with a sink that does nothing: how many
// messages a second the Postgres side can move, per batch size, for one relay and for two. Run on the built package
// (npm run build) against a throwaway server, which it fills and empties in a schema of its own:
//   node test/outbox-postgres/relay-throughput.mjs postgres://postgres@127.0.0.1:PORT/postgres
// (a server as test/support/postgres-server.ts starts one: initdb and postgres as the postgres user, fsync off).
import pg from 'pg';
import { fromPg } from '../../dist/outbox/postgres/pg.executor.js';
import { insertOutboxRows, requestFingerprint } from '../../dist/outbox/postgres/postgres.insert.js';
import { PostgresRelay } from '../../dist/outbox/postgres/postgres.relay.js';
import { migrate, outboxSchema } from '../../dist/outbox/postgres/postgres.schema.js';

const url = process.argv[2];
if (!url) throw new Error('usage: node test/outbox-postgres/relay-throughput.mjs postgres://…');
const MESSAGES = 20_000;
const OWNERS = 8;
const pool = new pg.Pool({ connectionString: url, max: 20 });
const executor = fromPg(pool);
const schema = outboxSchema('outbox_throughput');
await migrate(executor, schema);

function row(i) {
  const message = { method: 'POST', path: '/api/messages', body: { to: `user-${i}`, text: 'hello' } };
  const owner = `tenant-${i % OWNERS}`;
  return { id: `${owner}.m-${i}`, owner, message, fingerprint: requestFingerprint(message) };
}

async function fill(offset) {
  for (let start = 0; start < MESSAGES; start += 1_000) {
    const client = await pool.connect();
    await client.query('BEGIN');
    const rows = Array.from({ length: 1_000 }, (_, i) => row(offset + start + i));
    await insertOutboxRows(executor, client, schema, rows, { now: Date.now() });
    await client.query('COMMIT');
    client.release();
  }
}

async function drain(relays) {
  const started = performance.now();
  await Promise.all(
    relays.map(async (relay) => {
      while ((await relay.relayOnce()) > 0);
    }),
  );
  return performance.now() - started;
}

/** One transaction per message, one insert each: what enqueueIn adds to an application's transaction. */
async function enqueueRate(count, offset) {
  const client = await pool.connect();
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    await client.query('BEGIN');
    await insertOutboxRows(executor, client, schema, [row(offset + i)], { now: Date.now() });
    await client.query('COMMIT');
  }
  const ms = performance.now() - started;
  client.release();
  await pool.query(`TRUNCATE ${schema.table('messages')}`);
  return ms;
}

let offset = 0;
const sink = () => Promise.resolve('done');
const results = [];
for (const relays of [1, 2]) {
  for (const batchSize of [10, 50, 100, 250, 500]) {
    const runs = [];
    for (let run = 0; run < 3; run++) {
      await fill((offset += MESSAGES));
      const made = Array.from({ length: relays }, () => new PostgresRelay({ executor, schema, sink, batchSize }));
      runs.push(MESSAGES / ((await drain(made)) / 1000));
    }
    runs.sort((a, b) => a - b);
    results.push({
      relays,
      batchSize,
      'messages/s (median of 3)': Math.round(runs[1]),
      min: Math.round(runs[0]),
      max: Math.round(runs[2]),
    });
  }
}
console.table(results);
const single = 2_000;
const ms = await enqueueRate(single, (offset += MESSAGES));
console.log(`one message per transaction (BEGIN, insert, COMMIT): ${Math.round(single / (ms / 1000))} transactions/s`);
await pool.end();
