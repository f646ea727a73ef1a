import type { KeyObject } from 'node:crypto';
import type { AssertionKeySource } from '../platform-auth.errors.js';

/**
 * The key assertions are signed with, wherever it lives: a PEM key parsed into memory, a key inside a PKCS#11 token,
 * or the application's `signer` (a KMS, Vault Transit, …). Machine authentication, rotation and user sign-in's
 * `private_key_jwt` all sign through this one shape, so the header, claims and encoding never depend on the source.
 */
export interface AssertionKey {
  readonly source: AssertionKeySource;
  /** Names the key in messages: `key.privateKeyPath /etc/key.pem`, `pkcs11:token=…;object=…`, `signer (KmsSigner)`. */
  readonly name: string;
  /** The public key signatures verify with: the certificate's for a token or a signer, the key's own for PEM. */
  readonly publicKey: KeyObject;
  /** Modulus length of the RSA key, in bits. */
  readonly modulusBits: number;
  /** One line for `doctor` and start-up logs: where the key is and what it is; never secret. */
  readonly description: string;
  /**
   * An RS256 signature (RSASSA-PKCS1-v1_5 with SHA-256) of `signingInput`. Signatures from a token or a signer are
   * verified against `publicKey` before they are returned: a wrong one rejects with `AssertionSigningError`.
   */
  sign(signingInput: Uint8Array): Promise<Uint8Array>;
  /** Releases what the key holds (PKCS#11 sessions); waits for signatures in flight. Idempotent. */
  close(): Promise<void>;
}
