import type { LoggerService } from '@nestjs/common';
import type { WorkerOptions } from 'bullmq';
import type { Clock, RedisConnectionOptions } from '../index.js';

/**
 * Where the queue lives, in the shared token store's words: `{ url }`, `{ clusterNodes }` or `{ sentinel: { nodes,
 * masterName } }`, with `username`, `password` and `tls` files as the store takes them; or `{ client }`, a node-redis
 * client of yours (`createClient`, `createCluster`, `createSentinel`) that stays yours to connect and close.
 */
export type OutboxConnection = RedisConnectionOptions;

/** A message as `PlatformOutbox.enqueue` takes it. */
export interface OutboxMessage {
  /** A named integration (`forRoot({ name })`); the default one when neither this nor `tenant` is given. */
  readonly integration?: string;
  /** A tenant of `PlatformAuthModule.forTenants`, sent with that tenant's client. */
  readonly tenant?: string;
  readonly method: string;
  /** A path on the platform's API (`/api/messages`), resolved against the integration's base URL. */
  readonly path: string;
  /** A string is sent as it is; anything else as JSON. Stored in Redis as given: see docs/outbox.md on encryption. */
  readonly body?: unknown;
  /** Stored (and sent) only when every name is in `storedHeaders`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The message's idempotency key, sent with every attempt; a new UUID when absent. The same key with the same request
   * under the same integration or tenant adds nothing; with another request it is refused.
   */
  readonly idempotencyKey?: string;
}

/** What a job holds in Redis: no token, assertion or key, and only the headers allowed by name. */
export interface StoredMessage {
  readonly integration?: string;
  readonly tenant?: string;
  readonly method: string;
  readonly path: string;
  /** The body as given, or as `bodyCodec.encode` made it (then `sealed` is true). */
  readonly body?: unknown;
  readonly sealed?: true;
  readonly headers?: Readonly<Record<string, string>>;
  /** The key each attempt sends, as given to `enqueue`. */
  readonly idempotencyKey?: string;
  /** Set by `retry(id)` when the last attempt may have reached the platform: the next one reconciles first. */
  readonly mayHaveReached?: true;
}

/** A job as the `reconcile` hook and the dead-letter list see it. */
export interface OutboxJob extends StoredMessage {
  /** The message's id: its integration or tenant (hashed) and its idempotency key, as `enqueue` returned it. */
  readonly id: string;
  /** The key each attempt of the message carries, as given to `enqueue`. */
  readonly idempotencyKey: string;
  /** Attempts that ended (failed or ambiguous) before this one. */
  readonly attemptsMade: number;
  /** Enqueued at, ms since the epoch. */
  readonly enqueuedAt: number;
}

/** A job that ended without delivery: refused by the platform (`failed`), or out of attempts (`dead-lettered`). */
export interface OutboxFailedJob extends OutboxJob {
  /** The HTTP status and the platform's error code, or what went wrong: never a body or a header value. */
  readonly reason: string;
  readonly failedAt?: number;
}

/**
 * Asked before re-sending a message whose last attempt may have reached the platform (a timeout or a dropped
 * connection after the request went out, a worker that died mid-send): `'delivered'` ends the job as sent without
 * sending it again, `'send'` sends it.
 */
export type OutboxReconcile = (job: OutboxJob) => Promise<'delivered' | 'send'>;

export interface OutboxRetryOptions {
  /** Attempts in all, the first included (default 12). */
  readonly attempts?: number;
  /** The first back-off; each next one doubles (default 1000 ms). */
  readonly delayMs?: number;
  /** The longest back-off, and the most a `Retry-After` is waited for (default 300000 ms). */
  readonly maxDelayMs?: number;
}

/**
 * BullMQ's own worker options, passed to its `Worker` as they are (https://docs.bullmq.io): `concurrency` (default 4
 * here, BullMQ's 1), `lockDuration`, `lockRenewTime`, `stalledInterval`, `maxStalledCount` (default
 * `retry.attempts` here, BullMQ's 1), `drainDelay`, `runRetryDelay`, `limiter`, `name`; the others at BullMQ's
 * defaults. The outbox sets the connection, the key prefix and the back-off itself.
 */
export type OutboxWorkerOptions = Readonly<
  Pick<
    WorkerOptions,
    | 'concurrency'
    | 'lockDuration'
    | 'lockRenewTime'
    | 'stalledInterval'
    | 'maxStalledCount'
    | 'drainDelay'
    | 'runRetryDelay'
    | 'limiter'
    | 'name'
  >
>;

/**
 * Turns a body into what Redis stores (`encode`, at `enqueue`) and back (`decode`, at each send): to encrypt message
 * content at rest. The worker processes need the same codec (and key) as the processes that enqueue.
 */
export interface OutboxBodyCodec {
  encode(body: unknown): string | Promise<string>;
  decode(stored: string): unknown;
}

export interface PlatformOutboxOptions {
  /** Defaults to the `PLATFORM_OUTBOX_REDIS_*` variables (`PLATFORM_OUTBOX_REDIS_URL`, …). */
  readonly connection?: OutboxConnection;
  /** `true` (default) runs workers in this process, with BullMQ's options if given; `false` only enqueues. */
  readonly worker?: boolean | OutboxWorkerOptions;
  /** The BullMQ queue's name (default `platform-outbox`); its keys share one Redis Cluster slot. */
  readonly queueName?: string;
  /** Header names an application may enqueue with a message; `Authorization` is never one. */
  readonly storedHeaders?: readonly string[];
  /** The header the key is sent in (default `Idempotency-Key`). */
  readonly idempotencyKeyHeader?: string;
  readonly retry?: OutboxRetryOptions;
  /** Bounds one send (default 30000 ms); a send cut by it is ambiguous. */
  readonly sendTimeoutMs?: number;
  /** How long `enqueue`, `retry`, `status()` and the lists wait for Redis before they reject (default 5000 ms). */
  readonly enqueueTimeoutMs?: number;
  /** How long a sent job is kept, so enqueueing its key again stays a no-op (default 86400000 ms, a day). */
  readonly keepSentMs?: number;
  readonly reconcile?: OutboxReconcile;
  readonly bodyCodec?: OutboxBodyCodec;
  /**
   * The time source of the outbox (the age of jobs in `status()`, `Retry-After` dates, holds, its bounds on Redis);
   * default the system clock. Tests pass the `FakeClock` their integration has.
   */
  readonly clock?: Clock;
  /** Where the outbox's lines go (default Nest's `Logger`, context `PlatformOutbox`, so the application's logger). */
  readonly logger?: LoggerService;
}

/** `status()`: counts by state, the queue's depth and the age of its oldest job. */
export interface OutboxStatus {
  readonly queueName: string;
  readonly waiting: number;
  readonly delayed: number;
  readonly active: number;
  readonly sent: number;
  readonly failed: number;
  readonly deadLettered: number;
  /** Jobs not yet ended: waiting, delayed (in back-off or held) and active. */
  readonly depth: number;
  /** Age of the oldest job not yet ended, ms; 0 when there is none. */
  readonly oldestAgeMs: number;
  readonly workers: boolean;
}

/** What `PlatformOutbox` emits (`outbox.on('sent', …)`), in the process where it happened. */
export interface OutboxEvents {
  queued: [{ id: string }];
  sent: [{ id: string; status: number; attempts: number; reconciled: boolean }];
  retried: [{ id: string; attempt: number; reason: string; delayMs: number }];
  failed: [{ id: string; reason: string }];
  'dead-lettered': [{ id: string; reason: string }];
}
