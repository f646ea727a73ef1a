-- The tables of the Postgres outbox of nestjs-platform-auth (PostgreSQL 12 or later).
--
-- The outbox creates them when it starts, under a transaction-level advisory lock, unless `migrate: false`; teams
-- that run migrations with their own tool run this file instead (with another schema name: replace every
-- "platform_outbox" below, quotes included, with it). Every statement can run again: nothing is dropped or changed.

CREATE SCHEMA IF NOT EXISTS "platform_outbox";

-- Each claim of the relay takes one number: a row's lease is its owner and this epoch, which every later write of
-- the relay checks, so a relay whose lease ran out and was taken over changes nothing.
CREATE SEQUENCE IF NOT EXISTS "platform_outbox".lease_epochs;

-- Messages committed and not yet handed on. A row is due when available_at (ms since the epoch, on the clock of the
-- process that wrote it) has come: after its insert, after a retry's back-off, or once a lease ran out.
CREATE TABLE IF NOT EXISTS "platform_outbox".messages (
  -- The order of inserts; for one order_key of one owner, the order of their transactions' commits.
  seq bigserial PRIMARY KEY,
  -- The message's id: its owner and its idempotency key.
  id text NOT NULL UNIQUE,
  -- Who sends it (an integration or a tenant): claims are shared fairly between owners.
  owner text NOT NULL,
  -- Messages of one owner and order_key are sent one at a time, lowest seq first.
  order_key text,
  message jsonb NOT NULL,
  -- Hashes of the request (method, path, headers, body) the id was first stored for.
  fingerprint text NOT NULL,
  enqueued_at bigint NOT NULL,
  available_at bigint NOT NULL,
  -- Claims so far, this one included.
  attempts integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_epoch bigint,
  last_error text
);

-- The claim walks the owners and takes each one's due rows in order.
CREATE INDEX IF NOT EXISTS messages_due ON "platform_outbox".messages (owner, available_at, seq);

-- The head of each order_key: the row with no lower seq of the same owner and key.
CREATE INDEX IF NOT EXISTS messages_order ON "platform_outbox".messages (owner, order_key, seq)
  WHERE order_key IS NOT NULL;

-- Messages given up on, kept until they are retried or removed.
CREATE TABLE IF NOT EXISTS "platform_outbox".dead_letters (
  id text PRIMARY KEY,
  owner text NOT NULL,
  order_key text,
  message jsonb NOT NULL,
  fingerprint text NOT NULL,
  enqueued_at bigint NOT NULL,
  attempts integer NOT NULL,
  reason text NOT NULL,
  failed_at bigint NOT NULL
);
