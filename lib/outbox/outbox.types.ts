import type { Clock } from '../platform-auth.clock.js';
/** A Redis client instance BullMQ accepts as it is (node-redis 5/6, ioredis): the application keeps it and closes it. */
export interface OutboxRedisClient {
  duplicate(...args: never[]): unknown;
}

/**
 * Where the queue lives: `{ url }`, options as BullMQ takes them (`{ host, port, username, password, db, tls }`),
 * or a client instance. Options and URLs get a node-redis client of the outbox's own (the optional peer `redis`).
 */
export type OutboxConnection =
  | { readonly url: string }
  | {
      readonly host?: string;
      readonly port?: number;
      readonly username?: string;
      readonly password?: string;
      readonly db?: number;
      /** TLS socket options (`ca`, `cert`, `key`, `servername`), or `true`. */
      readonly tls?: true | Readonly<Record<string, unknown>>;
    }
  | OutboxRedisClient;

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
  /** The key each attempt sends (absent from jobs stored before keys were scoped: the job's id is sent then). */
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

export interface OutboxWorkerOptions {
  /** Jobs one process sends at once (default 4). */
  readonly concurrency?: number;
  /**
   * How long a worker's claim on a job lasts without renewal (default 30000 ms; renewed every half of it). A worker
   * that dies mid-send gives its job back once the claim has run out and a stall check has found it so: see
   * `stalledIntervalMs`.
   */
  readonly lockDurationMs?: number;
  /**
   * How often the workers look for jobs whose worker died (default 30000 ms, one look per interval for the whole
   * queue). A dead worker's job is back in the queue at most `max(lockDurationMs, 2 × stalledIntervalMs) +
   * stalledIntervalMs` after the worker died: up to 90 s with the defaults.
   */
  readonly stalledIntervalMs?: number;
  /**
   * How many times a job may be given back by a dead worker before it is dead-lettered (default `retry.attempts`).
   */
  readonly maxStalledCount?: number;
}

/**
 * Turns a body into what Redis stores (`encode`, at `enqueue`) and back (`decode`, at each send): to encrypt message
 * content at rest. The worker processes need the same codec (and key) as the processes that enqueue.
 */
export interface OutboxBodyCodec {
  encode(body: unknown): string | Promise<string>;
  decode(stored: string): unknown;
}

export interface PlatformOutboxOptions {
  /** Defaults to `PLATFORM_OUTBOX_REDIS_URL`. */
  readonly connection?: OutboxConnection;
  /** `true` (default) runs workers in this process; `false` only enqueues. */
  readonly worker?: boolean | OutboxWorkerOptions;
  /** The BullMQ queue's name (default `platform-outbox`). */
  readonly queueName?: string;
  /** Header names an application may enqueue with a message; `Authorization` is never one. */
  readonly storedHeaders?: readonly string[];
  /** The header the key is sent in (default `Idempotency-Key`). */
  readonly idempotencyKeyHeader?: string;
  readonly retry?: OutboxRetryOptions;
  /** Bounds one send (default 30000 ms); a send cut by it is ambiguous. */
  readonly sendTimeoutMs?: number;
  /** How long `enqueue` waits for Redis before it rejects (default 5000 ms). */
  readonly enqueueTimeoutMs?: number;
  /** How long a sent job is kept, so enqueueing its key again stays a no-op (default 86400000 ms, a day). */
  readonly keepSentMs?: number;
  readonly reconcile?: OutboxReconcile;
  readonly bodyCodec?: OutboxBodyCodec;
  /**
   * The time source of the outbox (the age of jobs in `status()`, `Retry-After` dates, its bounds on Redis); default
   * the system clock. Tests pass the `FakeClock` their integration has.
   */
  readonly clock?: Clock;
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
  /** Jobs not yet ended: waiting, delayed (in back-off) and active. */
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
