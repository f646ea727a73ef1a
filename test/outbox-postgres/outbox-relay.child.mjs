// A relay process on the built package and node-postgres: it claims a batch, tells the parent which rows it holds,
// and hangs in its sink until the parent SIGKILLs it, as a relay process dies mid-batch (the machine gone, an OOM
// kill). Its leases are on the system clock.
import pg from 'pg';
import { fromPg } from '../../dist/outbox/postgres/pg.executor.js';
import { PostgresRelay } from '../../dist/outbox/postgres/postgres.relay.js';
import { outboxSchema } from '../../dist/outbox/postgres/postgres.schema.js';

const [url, schemaName, leaseMs] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url });
pool.on('error', () => undefined);
const claimed = [];
const relay = new PostgresRelay({
  executor: fromPg(pool),
  schema: outboxSchema(schemaName),
  leaseMs: Number(leaseMs),
  batchSize: 10,
  sink: (row) => {
    claimed.push(row.id);
    if (claimed.length === 10) process.send({ claimed });
    return new Promise(() => undefined);
  },
});
await relay.relayOnce();
