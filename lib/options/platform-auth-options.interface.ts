import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { TokenStore } from '../store/token-store.interface.js';

export type ThumbprintAlgorithm = 'sha1' | 'sha256';

export interface RetryOptions {
  /** Attempts per exchange, the first included. Default 4. */
  maxAttempts?: number;
  /** First back-off delay; doubled each attempt, with full jitter. Default 200 ms. */
  baseDelayMs?: number;
  /** Largest single delay, `Retry-After` included. Default 5,000 ms. */
  maxDelayMs?: number;
  /** Budget for one exchange, all attempts and delays included. Default 30,000 ms. */
  maxTotalMs?: number;
}

/** Bounds of the shared token store's protocol (see docs/shared-store.md). */
export interface TokenStoreTimingOptions {
  /** Bound on each store operation; past it the replica exchanges locally. Default 500 ms. */
  operationTimeoutMs?: number;
  /** How long the exchanging replica holds the lock; a crashed holder's lock lapses after this. Default 15,000 ms. */
  lockTtlMs?: number;
  /** How long a replica waits for another's token before exchanging itself. Default 20,000 ms (above the lock TTL). */
  waitTimeoutMs?: number;
}

/**
 * Signs assertions where the key lives (a cloud KMS, Vault Transit, an HSM behind a service): the key never enters
 * this process. Every signature is verified against the certificate's public key before the assertion is sent; see
 * docs/key-custody.md for AWS KMS, Azure Key Vault, Google Cloud KMS and Vault Transit.
 */
export interface PlatformAuthSigner {
  /** Names the signer in messages and errors. Default: its class name. */
  readonly name?: string;
  /**
   * The RS256 signature of `signingInput`: RSASSA-PKCS1-v1_5 with SHA-256, over these exact bytes (hash them once,
   * or let the KMS hash them), as raw bytes: 256 for an RSA-2048 key.
   */
  sign(signingInput: Uint8Array): Promise<Uint8Array>;
}

export interface PlatformAuthOptions {
  /** `https://{platform_domain}`; `http:` is accepted only for loopback hosts. */
  baseUrl: string;
  /** The system integration's machineId; becomes the assertion's `sub`. */
  machineId: string;
  /** PEM text of the RSA private key (PKCS#8 or PKCS#1, optionally encrypted). Literal `\n` is tolerated. */
  privateKey?: string;
  /** Path of the PEM private key file. */
  privateKeyPath?: string;
  /** Passphrase of an encrypted private key. */
  privateKeyPassphrase?: string;
  /**
   * RFC 7512 `pkcs11:` URI of an RSA-2048 key inside a PKCS#11 token (an HSM, a smart card, SoftHSM2), instead of a
   * PEM key: `pkcs11:token=…;object=…?module-path=…&pin-source=file:…`. The token signs (CKM_SHA256_RSA_PKCS); the
   * key never leaves it. Needs the `pkcs11js` package and the certificate. Secret: it may hold `pin-value`.
   */
  privateKeyUri?: string;
  /**
   * Signs assertions outside this process (a KMS, say), instead of a PEM key; needs the certificate, whose public key
   * checks each signature before it is sent.
   */
  signer?: PlatformAuthSigner;
  /** PEM text of the registered certificate; the thumbprint is computed from it. */
  certificate?: string;
  /** Path of the PEM certificate file. */
  certificatePath?: string;
  /**
   * The next pair, for a certificate rotation without a failed call: a key and its certificate prepared beside the
   * current pair (`platform-auth keygen --next`). Checked at start-up like the current pair, and must differ from
   * it. Assertions carry the current pair until the platform refuses it as not registered (the portal now holds the
   * next certificate); the same exchange then tries the next pair at once, and once that is accepted it is the
   * current pair for the process. One of `nextPrivateKey`, `nextPrivateKeyPath`, `nextPrivateKeyUri`, `nextSigner`,
   * with `nextCertificate` or `nextCertificatePath`. An encrypted next key uses `privateKeyPassphrase`.
   */
  nextPrivateKey?: string;
  /** Path of the next pair's PEM key file (see `nextPrivateKey`); re-read with `credentialsReloadIntervalMs`. */
  nextPrivateKeyPath?: string;
  /** `pkcs11:` URI of the next pair's key in a PKCS#11 token (see `nextPrivateKey`). Secret: it may hold `pin-value`. */
  nextPrivateKeyUri?: string;
  /** Signs with the next pair's key outside this process (see `nextPrivateKey`); needs the next certificate. */
  nextSigner?: PlatformAuthSigner;
  /** PEM text of the next pair's certificate (see `nextPrivateKey`). */
  nextCertificate?: string;
  /** Path of the next pair's PEM certificate file (see `nextPrivateKey`); re-read with `credentialsReloadIntervalMs`. */
  nextCertificatePath?: string;
  /** Certificate thumbprint; required only without a certificate. Case, colons and spaces are ignored. */
  thumbprint?: string;
  /** Hash used for the thumbprint (`iss`). Default `sha1`, the portal's form. */
  thumbprintAlgorithm?: ThumbprintAlgorithm;
  /** The assertion's `aud`. Default: the platform domain, `new URL(baseUrl).host`. */
  audience?: string;
  /** Default `/loginservice/connect/token`. */
  tokenPath?: string;
  /** How the assertion travels in the `token` form field. Default `jwt` (the compact JWT as is). */
  tokenEncoding?: 'jwt' | 'base64';
  /** Renew this long before expiry. Default 60; never more than half the token's lifetime. */
  refreshBeforeExpirySeconds?: number;
  /** Assertion lifetime. Default 300; above 300 is a configuration error. */
  assertionLifetimeSeconds?: number;
  /** Origins besides `baseUrl`'s that may receive the token. Default none. */
  allowedOrigins?: string[];
  /** Timeout of one token request. Default 10,000 ms. */
  exchangeTimeoutMs?: number;
  /** Largest token response body accepted. Default 64 KiB. */
  maxResponseBytes?: number;
  /** Retry policy for transient exchange failures (network, timeout, 5xx, 429). */
  retry?: RetryOptions;
  /** After a failed exchange, callers wait this long before the next attempt. Default 1,000 ms. */
  failureBackoffMs?: number;
  /** Correct assertion times by the offset measured from the platform's `Date` header. Default false. */
  correctClockSkew?: boolean;
  /**
   * `iat` and `nbf` are back-dated by this many seconds, so a platform whose clock is up to this far behind (or
   * ahead: `exp` still lies `assertionLifetimeSeconds - margin` ahead) accepts the assertion. Default 60, at most 120;
   * 0 is strict.
   */
  clockMarginSeconds?: number;
  /**
   * Acquire a token while the application boots (`onApplicationBootstrap`), so a wrong machineId or an unreachable
   * platform shows at deploy time: `'fail'` stops the start-up, `'warn'` logs and goes on, `'off'` (default) waits
   * for the first request.
   */
  startupCheck?: 'off' | 'warn' | 'fail';
  /**
   * Re-read `privateKeyPath` / `certificatePath` this often and switch to changed files once they pass every
   * start-up check (the last good pair is kept otherwise). Default: off. At least 1,000 ms.
   */
  credentialsReloadIntervalMs?: number;
  /**
   * Shares one token across the replicas of a service (e.g. `new RedisTokenStore({ url })`); needs
   * `tokenStoreEncryptionKey`. A store passed here stays yours to close. Default: none, each process exchanges.
   */
  tokenStore?: TokenStore;
  /**
   * `redis://` or `rediss://` (TLS) URL of a standalone Redis to share tokens through (needs the `redis` package).
   * It may hold credentials; it is a secret, dropped from the options after start-up. One of `tokenStoreUrl`,
   * `tokenStoreClusterNodes`, `tokenStoreSentinelNodes` and `tokenStore`.
   */
  tokenStoreUrl?: string;
  /** Redis Cluster: seed-node URLs, all `redis://` or all `rediss://`, without credentials (see `tokenStorePassword`). */
  tokenStoreClusterNodes?: string[];
  /** Redis Sentinel: the sentinels as `host:port`; with `tokenStoreSentinelMaster`. */
  tokenStoreSentinelNodes?: string[];
  /** Redis Sentinel: the name of the master the sentinels monitor. */
  tokenStoreSentinelMaster?: string;
  /** Redis ACL user, in any mode; needs a password. Overrides a user in `tokenStoreUrl`. */
  tokenStoreUsername?: string;
  /**
   * Redis password: of `tokenStoreUsername`, else of the default user; in any mode. Overrides one in `tokenStoreUrl`.
   * A secret: never printed, dropped from the options after start-up.
   */
  tokenStorePassword?: string;
  /** PEM file of the CA(s) that signed Redis's certificate, for a private CA; TLS in any mode. */
  tokenStoreTlsCaPath?: string;
  /** PEM client certificate for mutual TLS, with `tokenStoreTlsKeyPath`. Read again for each new connection. */
  tokenStoreTlsCertPath?: string;
  /** PEM private key (unencrypted) of `tokenStoreTlsCertPath`. Read again for each new connection. */
  tokenStoreTlsKeyPath?: string;
  /**
   * Encrypts tokens in the store: 32 random bytes, base64 or hex. Several, comma-separated or as an array, rotate
   * keys: the first encrypts, all decrypt. Required with a store. Services that share a key can plant tokens for each
   * other: use one key per trust domain. A secret: never printed, dropped from the options after start-up.
   */
  tokenStoreEncryptionKey?: string | string[];
  /** Prefix of the store's key names. Default `platform-auth:`. */
  tokenStoreKeyPrefix?: string;
  tokenStoreTiming?: TokenStoreTimingOptions;
  /** Time source; tests inject one. Default: the system clock. */
  clock?: Clock;
  /**
   * Where the module's warnings go (start-up configuration warnings, renewal failures, clock skew). Called with the
   * message only, so a `Logger` keeps its own context. Default: Nest's `Logger` with context `PlatformAuth`.
   */
  logger?: LoggerService;
}
