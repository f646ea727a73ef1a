import { isPlainObject } from '../util/plain-object.util.js';
import { BoundedReadConnection } from './redis-bounded.reader.js';
import type { RedisConnectionSettings } from './redis-connection.options.js';
import {
  buildClient,
  loadNodeRedis,
  type ConnectedClient,
  type OwnedRedisClient,
  type SendCommand,
} from './redis-client.factory.js';

/** How the store talks to Redis: one command about one key at a time. */
export interface RedisChannel {
  send: SendCommand;
  /**
   * The bounded read, where the channel can bound what it reads: a bulk string or nil, rejecting a reply over
   * `maxBytes` before it is read. Without it the read goes through `send`, and its reply is checked once it arrived.
   */
  read?(key: string, args: string[], maxBytes: number): Promise<string | null>;
  /** Connects a client the channel owns; resolves whether or not Redis answered (a Redis that is down is a state). */
  connect(): Promise<void>;
  close(): Promise<void>;
}

type Members = Record<string, unknown>;

/**
 * The channel for a client passed in (`tokenStore.client`): each kind of node-redis client is called with its own
 * `sendCommand` signature, told apart by its shape (a sentinel client has `getMasterNode`, a cluster client
 * `getSlotMaster`), and a plain object `{ sendCommand(args) }` is an adapter for another client. `undefined` for
 * anything else, which start-up refuses: a client whose `sendCommand` takes other arguments would fail every command,
 * and the fleet would quietly exchange once per replica.
 */
export function clientChannel(client: unknown): RedisChannel | undefined {
  const c = (typeof client === 'object' && client !== null ? client : {}) as Members;
  const has = (name: string) => typeof c[name] === 'function';
  let send: SendCommand;
  if (has('sendCommand') && has('getMasterNode')) {
    const sentinel = client as { sendCommand(isReadonly: boolean, args: string[]): Promise<unknown> };
    send = (_key, args) => sentinel.sendCommand(false, args);
  } else if (has('sendCommand') && has('getSlotMaster')) {
    const cluster = client as { sendCommand(key: string, isReadonly: boolean, args: string[]): Promise<unknown> };
    send = (key, args) => cluster.sendCommand(key, false, args);
  } else if (has('sendCommand') && !has('execute') && (isNodeRedisClient(c) || isPlainObject(client))) {
    const standalone = client as { sendCommand(args: string[]): Promise<unknown> };
    send = (_key, args) => standalone.sendCommand(args);
  } else {
    return undefined;
  }
  return { send, connect: () => Promise.resolve(), close: () => Promise.resolve() };
}

function isNodeRedisClient(client: Members): boolean {
  return typeof client.isOpen === 'boolean' && typeof client.duplicate === 'function';
}

/**
 * The channel of a client the module makes: connected on demand, dropped when a command fails (a new client is made
 * for the next command), destroyed at close, so no socket or timer outlives `close()`.
 */
export class OwnedRedisChannel implements RedisChannel {
  #connection?: Promise<ConnectedClient>;
  #current?: OwnedRedisClient;
  #redis?: ReturnType<typeof loadNodeRedis>;
  #closed = false;
  /** Standalone only: a cluster's slot owner and a sentinel's master are known to node-redis, not here. */
  readonly #reader?: BoundedReadConnection;

  /**
   * `answerTimeoutMs`: a client that has not answered a command by then is replaced by a new one for the next command
   * (a sentinel client whose master died can wait for it indefinitely; a new one asks the sentinels afresh).
   */
  constructor(
    private readonly settings: RedisConnectionSettings,
    private readonly connectTimeoutMs: number,
    private readonly answerTimeoutMs?: number,
  ) {
    if (settings.mode === 'standalone') {
      const reader = new BoundedReadConnection(settings, connectTimeoutMs, answerTimeoutMs);
      this.#reader = reader;
      this.read = (_key, args, maxBytes) => reader.read(args, maxBytes);
    }
  }

  readonly read?: RedisChannel['read'];

  /** Rejects only when the `redis` package is missing: a set-up mistake, unlike a Redis that is down. */
  async connect(): Promise<void> {
    await this.load();
    await this.connected().catch(() => undefined);
  }

  readonly send: SendCommand = async (key, args) => {
    const connected = await this.connected();
    const timer =
      this.answerTimeoutMs === undefined
        ? undefined
        : setTimeout(() => this.drop(connected.client), this.answerTimeoutMs).unref();
    try {
      return await connected.send(key, args);
    } catch (error) {
      this.drop(connected.client);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };

  async close(): Promise<void> {
    this.#closed = true;
    this.#reader?.close();
    this.drop(this.#current);
    return Promise.resolve();
  }

  private connected(): Promise<ConnectedClient> {
    if (this.#closed) return Promise.reject(new Error('the token store is closed'));
    this.#connection ??= this.open();
    return this.#connection;
  }

  private async open(): Promise<ConnectedClient> {
    let connected: ConnectedClient;
    try {
      connected = buildClient(await this.load(), this.settings, this.connectTimeoutMs);
    } catch (error) {
      this.#connection = undefined;
      throw error;
    }
    const { client } = connected;
    this.#current = client;
    // Connection errors surface as failed commands, which the module reports once per state change; without a
    // listener node-redis would throw them as an unhandled 'error' event.
    client.on('error', () => this.drop(client));
    try {
      await client.connect();
    } catch (error) {
      this.drop(client);
      throw error;
    }
    if (this.#closed) this.drop(client);
    return connected;
  }

  private load(): ReturnType<typeof loadNodeRedis> {
    this.#redis ??= loadNodeRedis().catch((error: unknown) => {
      this.#redis = undefined;
      throw error;
    });
    return this.#redis;
  }

  private drop(client: OwnedRedisClient | undefined): void {
    if (!client || client !== this.#current) return;
    this.#current = undefined;
    this.#connection = undefined;
    try {
      const closing = client.destroy() as Promise<unknown> | undefined;
      // A cluster or sentinel client may destroy asynchronously, and reject when it was never connected.
      if (closing && typeof closing.catch === 'function') closing.catch(() => undefined);
    } catch {
      // Already closed by its own failure: nothing left to release.
    }
  }
}
