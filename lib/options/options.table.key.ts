import type { OptionRow } from './options.table.types.js';

/** The current pair (`key`) and the next pair (`next`): one `KeySource` each. */
export const KEY_ROWS = {
  key: {
    kind: 'object',
    rule: 'the key that signs assertions and its registered certificate, as the `key.*` rows say',
  },
  'key.privateKey': {
    env: 'PLATFORM_PRIVATE_KEY',
    kind: 'pem',
    secret: true,
    rule: 'PEM text of the RSA key (PKCS#8 or PKCS#1, ≥ 2048 bits, warning when not 2048); this, `privateKeyPath`, `privateKeyUri` or `signer`; literal `\\n` and CRLF tolerated',
  },
  'key.privateKeyPath': {
    env: 'PLATFORM_PRIVATE_KEY_PATH',
    kind: 'path',
    rule: 'path of the PEM key file; this or `privateKey`',
  },
  'key.privateKeyUri': {
    env: 'PLATFORM_PRIVATE_KEY_URI',
    kind: 'text',
    secret: true,
    rule: 'RFC 7512 `pkcs11:` URI of a key inside a PKCS#11 token (`token=`, `object=` or `id=`, `?module-path=`, `pin-source=file:…` or `pin-value=`), instead of a PEM key; needs the `pkcs11js` package and the certificate',
  },
  'key.signer': {
    kind: 'instance',
    rule: 'an object whose `sign(signingInput)` returns an RS256 signature (RSASSA-PKCS1-v1_5, SHA-256), from a KMS say, instead of a PEM key; each signature is checked against the certificate, which is required',
  },
  'key.passphrase': {
    env: 'PLATFORM_PRIVATE_KEY_PASSPHRASE',
    kind: 'text',
    secret: true,
    rule: 'for an encrypted PEM (PKCS#8 or legacy PKCS#1)',
  },
  'key.certificate': {
    env: 'PLATFORM_CERTIFICATE',
    kind: 'pem',
    rule: 'PEM text of the registered certificate: exactly one, matching the key, valid now (warning within 30 days of expiry); the thumbprint is computed from it',
  },
  'key.certificatePath': {
    env: 'PLATFORM_CERTIFICATE_PATH',
    kind: 'path',
    rule: 'path of the PEM certificate file; this or `certificate`',
  },
  next: {
    kind: 'object',
    rule: 'the next pair, as `key`: tried within the same exchange when the platform refuses the current pair as not registered, and current once accepted',
  },
  'next.privateKey': {
    env: 'PLATFORM_NEXT_PRIVATE_KEY',
    kind: 'pem',
    secret: true,
    rule: "the next pair's key, as `key.privateKey`; this, `privateKeyPath`, `privateKeyUri` or `signer`",
  },
  'next.privateKeyPath': {
    env: 'PLATFORM_NEXT_PRIVATE_KEY_PATH',
    kind: 'path',
    rule: "path of the next pair's PEM key file; re-read with `credentialsReloadIntervalMs`",
  },
  'next.privateKeyUri': {
    env: 'PLATFORM_NEXT_PRIVATE_KEY_URI',
    kind: 'text',
    secret: true,
    rule: "`pkcs11:` URI of the next pair's key, as `key.privateKeyUri`",
  },
  'next.signer': { kind: 'instance', rule: "the next pair's signer, as `key.signer`" },
  'next.passphrase': {
    kind: 'text',
    secret: true,
    rule: "for the next pair's encrypted PEM; default `key.passphrase`",
  },
  'next.certificate': {
    env: 'PLATFORM_NEXT_CERTIFICATE',
    kind: 'pem',
    rule: "PEM text of the next pair's certificate: checked like `key.certificate`, and its thumbprint must differ from the current one",
  },
  'next.certificatePath': {
    env: 'PLATFORM_NEXT_CERTIFICATE_PATH',
    kind: 'path',
    rule: "path of the next pair's PEM certificate file; re-read with `credentialsReloadIntervalMs`",
  },
} as const satisfies Record<string, OptionRow>;
