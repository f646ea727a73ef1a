import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { reveal } from '../util/secret.util.js';
import type { RedisConnectionSettings, RedisEndpoint, RedisTlsFiles } from './redis-connection.options.js';

/** Sends one command about one key, whatever the client's own `sendCommand` signature. */
export type SendCommand = (key: string, args: string[]) => Promise<unknown>;

/** The slice of a node-redis client (standalone, cluster or sentinel) the module uses for a client it owns. */
export interface OwnedRedisClient {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  connect(): Promise<unknown>;
  destroy(): unknown;
}

export interface ConnectedClient {
  readonly client: OwnedRedisClient;
  readonly send: SendCommand;
}

interface SocketOptions {
  host?: string;
  port?: number;
  connectTimeout: number;
  reconnectStrategy: false | ((retries: number) => number);
  tls?: true;
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
}

interface ClientOptions {
  socket: SocketOptions;
  username?: string;
  password?: string;
  database?: number;
  disableOfflineQueue: boolean;
  commandOptions?: { timeout: number };
}

type StandaloneClient = OwnedRedisClient & { sendCommand(args: string[]): Promise<unknown> };

/** The part of the `redis` package the module calls, typed here so that it stays an optional peer. */
interface NodeRedisModule {
  createClient(this: void, options: ClientOptions): StandaloneClient;
  /** The client class, whose `factory(config)` builds it with the commands attached (6.3.1 exports it; 5.0.0 does not). */
  RedisClient?: { factory?(config: object): (options: ClientOptions) => StandaloneClient };
  createCluster(
    this: void,
    options: {
      rootNodes: { socket: SocketOptions }[];
      defaults: ClientOptions;
      minimizeConnections: boolean;
      commandOptions?: { timeout: number };
    },
  ): OwnedRedisClient & { sendCommand(key: string, isReadonly: boolean, args: string[]): Promise<unknown> };
  createSentinel(
    this: void,
    options: {
      name: string;
      sentinelRootNodes: RedisEndpoint[];
      nodeClientOptions: ClientOptions;
      sentinelClientOptions: Omit<ClientOptions, 'username' | 'password' | 'database'>;
      masterPoolSize: number;
      replicaPoolSize: number;
      commandOptions?: { timeout: number };
    },
  ): OwnedRedisClient & { sendCommand(isReadonly: boolean, args: string[]): Promise<unknown> };
}

const REDIS_PACKAGE_MISSING = 'a connection to Redis needs the `redis` package (node-redis 5 or 6): npm install redis';

/** Loads the optional `redis` package; rejects with a message saying what to install. */
export function loadNodeRedis(): Promise<NodeRedisModule> {
  return (import('redis') as Promise<unknown> as Promise<NodeRedisModule>).catch(() => {
    throw new Error(REDIS_PACKAGE_MISSING);
  });
}

/**
 * node-redis builds a client class, all its commands attached, for options it has not seen last (its cache holds one
 * entry, keyed by the options' JSON, port and password included): 60–110 ms of CPU for each client of a store that
 * reconnects, and every time two stores alternate. The commands the store sends do not depend on the options, so one
 * class, built on first use, serves every standalone client. A node-redis without the export builds as before.
 */
const standaloneFactories = new WeakMap<NodeRedisModule, (options: ClientOptions) => StandaloneClient>();

function createStandalone(redis: NodeRedisModule, options: ClientOptions): StandaloneClient {
  let create = standaloneFactories.get(redis);
  if (create === undefined) {
    create = redis.RedisClient?.factory?.({}) ?? redis.createClient;
    standaloneFactories.set(redis, create);
  }
  return create(options);
}

/**
 * A client that lasts: it reconnects by itself with `reconnectStrategy` (the delay before each new attempt), keeps
 * commands made while it is away until it is back, and arms no timer per command. For a part that keeps one client for
 * its whole life and bounds its own waits (an add-on's queue), not for the store, which makes a new client instead.
 */
interface LastingClient {
  readonly reconnectStrategy: (retries: number) => number;
}

/**
 * A node-redis client for `settings`, not yet connected. Unless `lasting`, it never reconnects or queues by itself:
 * while Redis is unreachable its commands fail at once, and the owner makes a new client, so a Redis that comes back
 * (or a new master after a failover, or a cluster's new topology) is found by the next connection. TLS files are read
 * here, for every new connection, so certificates renewed on disk are used without a restart.
 */
export function buildClient(
  redis: NodeRedisModule,
  settings: RedisConnectionSettings,
  connectTimeoutMs: number,
  lasting?: LastingClient,
): ConnectedClient {
  const tls = settings.tls && tlsOptions(settings.tls);
  const socket = (node?: RedisEndpoint): SocketOptions => ({
    ...(node && { host: node.host, port: node.port }),
    connectTimeout: connectTimeoutMs,
    reconnectStrategy: lasting?.reconnectStrategy ?? false,
    ...(tls && { tls: true, ...tls }),
    ...(tls && node && isIP(node.host) === 0 && { servername: node.host }),
  });
  const credentials = {
    username: settings.username,
    password: settings.password === undefined ? undefined : reveal(settings.password),
  };
  const disableOfflineQueue = lasting === undefined;
  // node-redis arms a 5 s timer for every command by default: a lasting client's owner bounds its own waits, and
  // its blocking reads wait longer than that by design.
  const commandOptions = lasting && { commandOptions: { timeout: 0 } };
  switch (settings.mode) {
    case 'standalone': {
      const client = createStandalone(redis, {
        socket: socket(settings.nodes[0]),
        ...credentials,
        database: settings.database,
        disableOfflineQueue,
        ...commandOptions,
      });
      return { client, send: (_key, args) => client.sendCommand(args) };
    }
    case 'cluster': {
      const client = redis.createCluster({
        rootNodes: settings.nodes.map((node) => ({ socket: socket(node) })),
        defaults: { socket: socket(), ...credentials, disableOfflineQueue },
        // Only the node that owns the integration's slot is connected: one connection, not one per master.
        minimizeConnections: true,
        ...commandOptions,
      });
      return { client, send: (key, args) => client.sendCommand(key, false, args) };
    }
    case 'sentinel': {
      const client = redis.createSentinel({
        name: settings.sentinelMaster!,
        sentinelRootNodes: [...settings.nodes],
        nodeClientOptions: { socket: socket(), ...credentials, disableOfflineQueue },
        sentinelClientOptions: { socket: socket(), disableOfflineQueue },
        masterPoolSize: 1,
        replicaPoolSize: 0,
        ...commandOptions,
      });
      // Every command goes to the master: a replica may lag behind the lock and the token.
      return { client, send: (_key, args) => client.sendCommand(false, args) };
    }
  }
}

/** The TLS files' contents, read now: for a node-redis client, and for the store's own read connection. */
export function tlsOptions(files: RedisTlsFiles): Pick<SocketOptions, 'ca' | 'cert' | 'key'> {
  const read = (path: string | undefined) => (path === undefined ? undefined : readFileSync(path, 'utf8'));
  return Object.fromEntries(
    Object.entries({ ca: read(files.caPath), cert: read(files.certPath), key: read(files.keyPath) }).filter(
      ([, value]) => value !== undefined,
    ),
  );
}
