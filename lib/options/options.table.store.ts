import type { OptionRow } from './options.table.types.js';

/** The shared token store (`tokenStore`). */
export const STORE_ROWS = {
  tokenStore: {
    kind: 'object',
    rule: 'a store the replicas of a service share one token through, as the `tokenStore.*` rows say; a `TokenStore` given here directly is read as `tokenStore.instance`',
  },
  'tokenStore.url': {
    env: 'PLATFORM_TOKEN_STORE_URL',
    kind: 'url',
    secret: true,
    rule: 'a standalone Redis to share tokens through, `redis://` or `rediss://` (TLS), credentials allowed (needs the `redis` package)',
  },
  'tokenStore.clusterNodes': {
    env: 'PLATFORM_TOKEN_STORE_CLUSTER_NODES',
    kind: 'list',
    rule: 'Redis Cluster instead: seed-node URLs, all `redis://` or all `rediss://`, without credentials; comma-separated in the environment',
  },
  'tokenStore.sentinel': { kind: 'object', rule: 'Redis Sentinel instead, as the `tokenStore.sentinel.*` rows say' },
  'tokenStore.sentinel.nodes': {
    env: 'PLATFORM_TOKEN_STORE_SENTINEL_NODES',
    kind: 'list',
    rule: 'the sentinels as `host:port`; comma-separated in the environment',
  },
  'tokenStore.sentinel.masterName': {
    env: 'PLATFORM_TOKEN_STORE_SENTINEL_MASTER',
    kind: 'text',
    rule: "the master's name the sentinels monitor",
  },
  'tokenStore.client': {
    kind: 'instance',
    rule: 'a node-redis client of yours (`createClient`, `createCluster` or `createSentinel`) instead; it stays yours to connect and close',
  },
  'tokenStore.instance': {
    kind: 'instance',
    rule: 'a `TokenStore` of yours instead, for another engine than Redis; it stays yours to close',
  },
  'tokenStore.username': {
    env: 'PLATFORM_TOKEN_STORE_USERNAME',
    kind: 'text',
    rule: "Redis ACL user, any mode; needs a password; overrides the URL's",
  },
  'tokenStore.password': {
    env: 'PLATFORM_TOKEN_STORE_PASSWORD',
    kind: 'text',
    secret: true,
    rule: "Redis password (of `username`, else of the default user), any mode; overrides the URL's",
  },
  'tokenStore.tls': { kind: 'object', rule: 'TLS files, as the `tokenStore.tls.*` rows say' },
  'tokenStore.tls.caPath': {
    env: 'PLATFORM_TOKEN_STORE_TLS_CA_PATH',
    kind: 'path',
    rule: "PEM file of the CA(s) that signed Redis's certificate (a private CA); TLS in any mode",
  },
  'tokenStore.tls.certPath': {
    env: 'PLATFORM_TOKEN_STORE_TLS_CERT_PATH',
    kind: 'path',
    rule: 'PEM client certificate for mutual TLS, with `keyPath`; files are read again on each new connection',
  },
  'tokenStore.tls.keyPath': {
    env: 'PLATFORM_TOKEN_STORE_TLS_KEY_PATH',
    kind: 'path',
    rule: 'PEM private key of `certPath` (unencrypted)',
  },
  'tokenStore.encryptionKey': {
    env: 'PLATFORM_TOKEN_STORE_ENCRYPTION_KEY',
    kind: 'text',
    secret: true,
    rule: 'required with a store: 32 random bytes, base64 or hex, one per trust domain; several (comma-separated) rotate keys, the first encrypts',
  },
  'tokenStore.keyPrefix': {
    kind: 'text',
    default: 'platform-auth:',
    rule: "prefix of the store's key names; no braces or white space",
  },
  'tokenStore.operationTimeoutMs': {
    kind: 'number',
    min: 1,
    default: 500,
    rule: 'bound on each store operation; past it the replica exchanges locally',
  },
  'tokenStore.lockTtlMs': {
    kind: 'number',
    min: 1,
    default: 15_000,
    rule: "how long the exchanging replica holds the lock; a crashed holder's lock lapses after it",
  },
  'tokenStore.waitTimeoutMs': {
    kind: 'number',
    min: 1,
    default: 20_000,
    rule: "how long a replica waits for another's token before exchanging itself; keep it above the lock's TTL",
  },
} as const satisfies Record<string, OptionRow>;
