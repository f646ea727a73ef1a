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

/**
 * One key and its certificate: where the key is (exactly one of `privateKey`, `privateKeyPath`, `privateKeyUri`,
 * `signer`) and the certificate registered for it (`certificate` or `certificatePath`). The same shape serves the
 * current pair (`key`), the next pair (`next`) and user sign-in's `private_key_jwt` (`key`).
 */
export interface KeySource {
  /** PEM text of the RSA private key (PKCS#8 or PKCS#1, optionally encrypted). Literal `\n` is tolerated. */
  privateKey?: string;
  /** Path of the PEM private key file. */
  privateKeyPath?: string;
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
  /** Passphrase of an encrypted PEM key. A secret. */
  passphrase?: string;
  /** PEM text of the registered certificate; the thumbprint is computed from it. */
  certificate?: string;
  /** Path of the PEM certificate file. */
  certificatePath?: string;
}
