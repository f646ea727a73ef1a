import type { PlatformAuthSigner } from './key-source.interface.js';

/** @deprecated Use `tokenStore.operationTimeoutMs`, `tokenStore.lockTtlMs` and `tokenStore.waitTimeoutMs`. */
export interface TokenStoreTimingOptions {
  /** Bound on each store operation; past it the replica exchanges locally. Default 500 ms. */
  operationTimeoutMs?: number;
  /** How long the exchanging replica holds the lock; a crashed holder's lock lapses after this. Default 15,000 ms. */
  lockTtlMs?: number;
  /** How long a replica waits for another's token before exchanging itself. Default 20,000 ms (above the lock TTL). */
  waitTimeoutMs?: number;
}

/** The flat key-source names of earlier releases, in both modules: each is now a field of `key`. */
export interface DeprecatedKeySourceOptions {
  /** @deprecated Use `key.privateKey`. */
  privateKey?: string;
  /** @deprecated Use `key.privateKeyPath`. */
  privateKeyPath?: string;
  /** @deprecated Use `key.passphrase`. */
  privateKeyPassphrase?: string;
  /** @deprecated Use `key.privateKeyUri`. */
  privateKeyUri?: string;
  /** @deprecated Use `key.signer`. */
  signer?: PlatformAuthSigner;
  /** @deprecated Use `key.certificate`. */
  certificate?: string;
  /** @deprecated Use `key.certificatePath`. */
  certificatePath?: string;
}

/**
 * The flat option names of earlier releases, still read this release: each is the setting its `@deprecated` tag
 * names, start-up logs one warning listing those in use, and setting one together with its new name is a
 * configuration error. docs/configuration.md lists them.
 */
export interface PlatformAuthDeprecatedOptions extends DeprecatedKeySourceOptions {
  /** @deprecated Use `next.privateKey`. */
  nextPrivateKey?: string;
  /** @deprecated Use `next.privateKeyPath`. */
  nextPrivateKeyPath?: string;
  /** @deprecated Use `next.privateKeyUri`. */
  nextPrivateKeyUri?: string;
  /** @deprecated Use `next.signer`. */
  nextSigner?: PlatformAuthSigner;
  /** @deprecated Use `next.certificate`. */
  nextCertificate?: string;
  /** @deprecated Use `next.certificatePath`. */
  nextCertificatePath?: string;
  /** @deprecated Use `exchange.path`. */
  tokenPath?: string;
  /** @deprecated Use `exchange.encoding`. */
  tokenEncoding?: 'jwt' | 'base64';
  /** @deprecated Use `exchange.timeoutMs`. */
  exchangeTimeoutMs?: number;
  /** @deprecated Use `exchange.maxResponseBytes`. */
  maxResponseBytes?: number;
  /** @deprecated Use `exchange.failureBackoffMs`. */
  failureBackoffMs?: number;
  /** @deprecated Use `tokenStore.url`. */
  tokenStoreUrl?: string;
  /** @deprecated Use `tokenStore.clusterNodes`. */
  tokenStoreClusterNodes?: string[];
  /** @deprecated Use `tokenStore.sentinel.nodes`. */
  tokenStoreSentinelNodes?: string[];
  /** @deprecated Use `tokenStore.sentinel.masterName`. */
  tokenStoreSentinelMaster?: string;
  /** @deprecated Use `tokenStore.username`. */
  tokenStoreUsername?: string;
  /** @deprecated Use `tokenStore.password`. */
  tokenStorePassword?: string;
  /** @deprecated Use `tokenStore.tls.caPath`. */
  tokenStoreTlsCaPath?: string;
  /** @deprecated Use `tokenStore.tls.certPath`. */
  tokenStoreTlsCertPath?: string;
  /** @deprecated Use `tokenStore.tls.keyPath`. */
  tokenStoreTlsKeyPath?: string;
  /** @deprecated Use `tokenStore.encryptionKey`. */
  tokenStoreEncryptionKey?: string | string[];
  /** @deprecated Use `tokenStore.keyPrefix`. */
  tokenStoreKeyPrefix?: string;
  /** @deprecated Use `tokenStore.operationTimeoutMs`, `tokenStore.lockTtlMs` and `tokenStore.waitTimeoutMs`. */
  tokenStoreTiming?: TokenStoreTimingOptions;
}
