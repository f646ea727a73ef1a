import type * as BullMqModule from 'bullmq';
import type { ConnectionOptions } from 'bullmq';
import { PlatformOutboxError } from './outbox.errors.js';

/** The part of bullmq the outbox uses: loaded when the outbox starts, so an app without it never loads it. */
export type BullMq = Pick<
  typeof BullMqModule,
  'Job' | 'Queue' | 'Worker' | 'UnrecoverableError' | 'DelayedError' | 'ConnectionClosedError'
>;

export async function loadBullMq(): Promise<BullMq> {
  return (import('bullmq') as Promise<BullMq>).catch((error: unknown) => {
    throw new PlatformOutboxError(
      'config',
      'PlatformOutboxModule needs the `bullmq` package (6): npm install bullmq@6',
      {
        cause: error,
      },
    );
  });
}

/**
 * The queue's key prefix. BullMQ names every key of a queue `<prefix>:<queue>:…`; the hash tag puts them all in one
 * Redis Cluster slot, as its scripts require (BullMQ's `{…}` prefix convention), and each queue in a slot of its own.
 */
export function queuePrefix(queueName: string): string {
  return `bull:{${queueName}}`;
}

/**
 * node-redis's errors of a connection lost mid-command or not there (yet), and of one that cannot be made: known by
 * their classes, whose instances are all named `Error`.
 */
const LOST = new Set([
  'SocketClosedUnexpectedlyError',
  'ClientOfflineError',
  'ClientClosedError',
  'ConnectionTimeoutError',
  'SocketTimeoutError',
  'RootNodesUnavailableError',
]);
const LOST_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Whether `error` says the connection to Redis is lost (or cannot be made), rather than that a command failed. */
function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code } = error as { code?: unknown };
  return LOST.has(error.constructor.name) || LOST_CODES.has(String(code));
}

type Members = Record<PropertyKey, unknown>;
type Listener = (...args: unknown[]) => void;

/**
 * `client` (a node-redis client, cluster or sentinel client) as BullMQ 6's node-redis adapter expects one, through
 * its public methods only:
 * - a lost connection rejects with BullMQ's `ConnectionClosedError` (the driver's error as its cause), which BullMQ
 *   waits out and records again, where node-redis's own errors would fail the job, or a completion already sent;
 * - a cluster tells `ready` when it has connected (node-redis's cluster says `connect`), so BullMQ's wait for a
 *   duplicate's readiness ends;
 * - a sentinel's duplicate keeps its master's name (BullMQ passes its connection name as `name`), and `quit` and
 *   `disconnect` are its `close` and `destroy`.
 */
export function bullMqConnection(bull: BullMq, client: object): ConnectionOptions {
  const members = client as Members;
  const kind =
    typeof members.getSlotMaster === 'function'
      ? 'cluster'
      : typeof members.getMasterNode === 'function'
        ? 'sentinel'
        : 'standalone';
  const lost = (error: unknown): Error =>
    isConnectionLost(error)
      ? Object.assign(new bull.ConnectionClosedError('Connection is closed.'), { cause: error })
      : (error as Error);
  const relays = new Map<PropertyKey, unknown>();
  const listeners = (method: PropertyKey) => (event: string, listener: Listener) => {
    (members[method] as (event: string, listener: Listener) => unknown).call(
      client,
      kind === 'cluster' && event === 'ready' ? 'connect' : event,
      listener,
    );
    return proxy;
  };
  const own: Record<PropertyKey, (...args: never[]) => unknown> = {
    on: listeners('on'),
    once: listeners('once'),
    off: listeners('off'),
    removeListener: listeners('removeListener'),
    duplicate: (overrides?: object) =>
      bullMqConnection(
        bull,
        (members.duplicate as (overrides?: object) => object).call(client, kind === 'sentinel' ? undefined : overrides),
      ),
    ...(typeof members.quit !== 'function' && { quit: () => (members.close as () => unknown).call(client) }),
    ...(typeof members.disconnect !== 'function' && {
      disconnect: () => (members.destroy as () => unknown).call(client),
    }),
  };
  const proxy: ConnectionOptions = new Proxy(client, {
    get(target, property) {
      if (Object.hasOwn(own, property)) return own[property];
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      let relay = relays.get(property);
      if (relay === undefined) {
        relay = (...args: unknown[]) => {
          const result = (value as (...args: unknown[]) => unknown).apply(target, args);
          return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(lost(error))) : result;
        };
        relays.set(property, relay);
      }
      return relay;
    },
  });
  return proxy;
}
