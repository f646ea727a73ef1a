import type * as BullMqModule from 'bullmq';
import type { ConnectionOptions, Queue, Worker } from 'bullmq';
import { tolerantBullMq } from './outbox.bull.js';
import { reveal, secretText } from '../util/secret.util.js';
import { PlatformOutboxError } from './outbox.errors.js';
import type { OutboxConnection, OutboxRedisClient } from './outbox.types.js';

const OUTBOX_REDIS_URL_VARIABLE = 'PLATFORM_OUTBOX_REDIS_URL';

/** The part of bullmq the outbox uses: loaded when the outbox starts, so an app without it never loads it. */
export type BullMq = Pick<
  typeof BullMqModule,
  'Job' | 'Queue' | 'Worker' | 'UnrecoverableError' | 'ConnectionClosedError'
>;
export type OutboxQueue = Queue;
export type OutboxBullWorker = Worker;

interface NodeRedisClient extends OutboxRedisClient {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  connect(): Promise<unknown>;
  destroy(): unknown;
}

interface NodeRedis {
  createClient(options: Record<string, unknown>): NodeRedisClient;
}

/** The Redis connection BullMQ is given, and the client to close at shutdown when the outbox made it. */
export interface OutboxRedis {
  readonly connection: ConnectionOptions;
  readonly owned?: { destroy(): unknown };
  /** Whether Redis answers now: node-redis's `isReady`, ioredis's `status`. */
  ready(): boolean;
}

function isReady(client: unknown): boolean {
  const { isReady, status } = client as { isReady?: unknown; status?: unknown };
  return isReady === true || status === 'ready';
}

export async function loadBullMq(): Promise<BullMq> {
  return (import('bullmq') as Promise<BullMq>).then(tolerantBullMq, () => {
    throw new PlatformOutboxError(
      'config',
      'PlatformOutboxModule needs the `bullmq` package (6): npm install bullmq@6',
    );
  });
}

function isClient(connection: OutboxConnection): connection is OutboxRedisClient {
  return typeof (connection as { duplicate?: unknown }).duplicate === 'function';
}

/**
 * The connection to give BullMQ: a client the application passed, as it is; for a URL or options, a node-redis client
 * that reconnects by itself (BullMQ's workers wait on it through a Redis restart) and is closed by the outbox.
 */
export async function openRedis(
  connection: OutboxConnection | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Promise<OutboxRedis> {
  const given = connection ?? (env[OUTBOX_REDIS_URL_VARIABLE] ? { url: env[OUTBOX_REDIS_URL_VARIABLE] } : undefined);
  if (given === undefined) {
    throw new PlatformOutboxError(
      'config',
      `PlatformOutboxModule: no Redis connection; give connection ({ url } or { host, port }) or set ${OUTBOX_REDIS_URL_VARIABLE}`,
    );
  }
  if (isClient(given)) return { connection: given as ConnectionOptions, ready: () => isReady(given) };
  const opened = 'url' in given ? { url: reveal(given.url) as string } : { ...given, password: reveal(given.password) };
  const redis = await (import('redis') as Promise<unknown> as Promise<NodeRedis>).catch(() => {
    throw new PlatformOutboxError(
      'config',
      'PlatformOutboxModule needs the `redis` package (node-redis 5 or 6) for a connection given as a URL or options',
    );
  });
  const client = redis.createClient(clientOptions(opened as typeof given));
  // Connection errors are reported through BullMQ's own listeners and by enqueue's bound; this one keeps an
  // unanswered 'error' event from ending the process.
  client.on('error', () => undefined);
  // Not awaited: a Redis down at start-up is waited for like one that goes down later (the client reconnects, BullMQ
  // waits for it to be ready), and the application starts meanwhile.
  client.connect().catch(() => undefined);
  return { connection: client as ConnectionOptions, owned: client, ready: () => isReady(client) };
}

/** Back-off between reconnections: fast at first, then every 2 s, for ever. */
const reconnectStrategy = (retries: number): number => Math.min(50 * 2 ** retries, 2_000);

/**
 * No per-command timer. node-redis 6 arms an `AbortSignal.timeout` for every command unless told otherwise: a timer
 * and a signal on each of the commands every message takes, about half their CPU in this process. The outbox bounds
 * its own waits instead: `enqueue`, `status()`, the lists and `retry` by `enqueueTimeoutMs`; a worker waits for Redis
 * as BullMQ's own commands do, its job's lock handing the job on if the wait outlasts it; a lost connection ends the
 * commands in flight with its socket.
 */
const commandOptions = { timeout: 0 };

function clientOptions(given: Exclude<OutboxConnection, OutboxRedisClient>): Record<string, unknown> {
  if ('url' in given) {
    if (typeof given.url !== 'string' || !/^rediss?:\/\//.test(given.url)) {
      throw new PlatformOutboxError(
        'config',
        'PlatformOutboxModule: connection.url must be a redis:// or rediss:// URL',
      );
    }
    return { url: given.url, socket: { reconnectStrategy }, commandOptions };
  }
  const { host = '127.0.0.1', port = 6379, username, password, db, tls } = given;
  return {
    socket: { host, port, reconnectStrategy, ...(tls && { tls: true, ...(tls === true ? {} : tls) }) },
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
    ...(db !== undefined && { database: db }),
    commandOptions,
  };
}

/**
 * The options as the module keeps them: a password, and a URL (which may hold one), as secrets that no dump of the
 * application's providers renders; `openRedis` reads them. A client instance is the application's and stays as given.
 */
export function sealConnection<T extends { readonly connection?: OutboxConnection }>(options: T): T {
  const { connection } = options;
  if (typeof connection !== 'object' || connection === null || isClient(connection)) return options;
  const sealed =
    'url' in connection
      ? typeof connection.url === 'string'
        ? { ...connection, url: secretText(connection.url) }
        : connection
      : typeof connection.password === 'string'
        ? { ...connection, password: secretText(connection.password) }
        : connection;
  return { ...options, connection: sealed as unknown as OutboxConnection };
}
