/**
 * The option names of earlier shapes, each with the option that now holds its setting. Start-up refuses an old name
 * with a problem naming the new place (`privateKeyPath: moved to key.privateKeyPath`) instead of ignoring it: a
 * setting left where it no longer counts would fall back to a default in silence. A dotted name is a setting inside
 * an object of the old shape; `retry.maxTotalMs` is the token exchange's, and the top-level `retry` now the policy of
 * calls to the platform's APIs, which has no such setting.
 */
export const MOVED_OPTIONS: Readonly<Record<string, string>> = {
  privateKey: 'key.privateKey',
  privateKeyPath: 'key.privateKeyPath',
  privateKeyUri: 'key.privateKeyUri',
  signer: 'key.signer',
  privateKeyPassphrase: 'key.passphrase',
  certificate: 'key.certificate',
  certificatePath: 'key.certificatePath',
  nextPrivateKey: 'next.privateKey',
  nextPrivateKeyPath: 'next.privateKeyPath',
  nextPrivateKeyUri: 'next.privateKeyUri',
  nextSigner: 'next.signer',
  nextCertificate: 'next.certificate',
  nextCertificatePath: 'next.certificatePath',
  tokenPath: 'exchange.path',
  tokenEncoding: 'exchange.encoding',
  exchangeTimeoutMs: 'exchange.timeoutMs',
  maxResponseBytes: 'exchange.maxResponseBytes',
  failureBackoffMs: 'exchange.failureBackoffMs',
  'retry.maxTotalMs': 'exchange.retry.maxTotalMs',
  tokenStoreUrl: 'tokenStore.url',
  tokenStoreClusterNodes: 'tokenStore.clusterNodes',
  tokenStoreSentinelNodes: 'tokenStore.sentinel.nodes',
  tokenStoreSentinelMaster: 'tokenStore.sentinel.masterName',
  tokenStoreUsername: 'tokenStore.username',
  tokenStorePassword: 'tokenStore.password',
  tokenStoreTlsCaPath: 'tokenStore.tls.caPath',
  tokenStoreTlsCertPath: 'tokenStore.tls.certPath',
  tokenStoreTlsKeyPath: 'tokenStore.tls.keyPath',
  tokenStoreEncryptionKey: 'tokenStore.encryptionKey',
  tokenStoreKeyPrefix: 'tokenStore.keyPrefix',
  'tokenStoreTiming.operationTimeoutMs': 'tokenStore.operationTimeoutMs',
  'tokenStoreTiming.lockTtlMs': 'tokenStore.lockTtlMs',
  'tokenStoreTiming.waitTimeoutMs': 'tokenStore.waitTimeoutMs',
};
