import type { TokenStore } from './token-store.interface.js';

/**
 * Where a Redis is and how to reach it: exactly one of `url`, `clusterNodes`, `sentinel` and `client`, with the ACL
 * user and the TLS files of a connection the module makes. The shared store's connection (`tokenStore`), and what a
 * part built on this package takes for its own Redis (`defineRedisConnection`).
 */
export interface RedisConnectionOptions {
  /**
   * `redis://` or `rediss://` (TLS) URL of a standalone Redis (needs the `redis` package). It may hold credentials;
   * it is a secret, dropped from the options after start-up.
   */
  url?: string;
  /** Redis Cluster: seed-node URLs, all `redis://` or all `rediss://`, without credentials (see `password`). */
  clusterNodes?: string[];
  /** Redis Sentinel: the sentinels and the master they monitor. */
  sentinel?: {
    /** The sentinels as `host:port`. */
    nodes: string[];
    /** The name of the master the sentinels monitor. */
    masterName: string;
  };
  /**
   * A node-redis client you made (`createClient`, `createCluster` or `createSentinel`), used as it is: its connection
   * stays yours to connect and close. Any object as far as the types go, so that they need neither the `redis`
   * package nor one of its versions; checked by its shape at start-up, where anything else is a configuration error
   * naming this option. The token store also takes `{ sendCommand: (args) => … }` that sends `args` as one command,
   * for another client.
   */
  client?: object;
  /** Redis ACL user, in any mode; needs a password. Overrides a user in `url`. */
  username?: string;
  /**
   * Redis password: of `username`, else of the default user; in any mode. Overrides one in `url`. A secret: never
   * printed, dropped from the options after start-up.
   */
  password?: string;
  /** TLS files of the connection to Redis, read again for each new connection. */
  tls?: {
    /** PEM file of the CA(s) that signed Redis's certificate, for a private CA; TLS in any mode. */
    caPath?: string;
    /** PEM client certificate for mutual TLS, with `keyPath`. */
    certPath?: string;
    /** PEM private key (unencrypted) of `certPath`. */
    keyPath?: string;
  };
}

/**
 * The store that shares one token across the replicas of a service: where it is (a Redis, as `RedisConnectionOptions`
 * says, or `instance`), and the key that encrypts tokens in it.
 */
export interface TokenStoreOptions extends RedisConnectionOptions {
  /** A `TokenStore` of your own, for another engine than Redis; it stays yours to close. */
  instance?: TokenStore;
  /**
   * Encrypts tokens in the store: 32 random bytes, base64 or hex. Several, comma-separated or as an array, rotate
   * keys: the first encrypts, all decrypt. Required with a store. Services that share a key can plant tokens for each
   * other: use one key per trust domain. A secret: never printed, dropped from the options after start-up.
   */
  encryptionKey?: string | string[];
  /** Prefix of the store's key names. Default `platform-auth:`. */
  keyPrefix?: string;
  /** Bound on each store operation; past it the replica exchanges locally. Default 500 ms. */
  operationTimeoutMs?: number;
  /** How long the exchanging replica holds the lock; a crashed holder's lock lapses after this. Default 15,000 ms. */
  lockTtlMs?: number;
  /** How long a replica waits for another's token before exchanging itself. Default 20,000 ms (above the lock TTL). */
  waitTimeoutMs?: number;
}
