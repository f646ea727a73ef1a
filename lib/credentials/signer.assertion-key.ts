import type { KeyObject } from 'node:crypto';
import type { PlatformAuthSigner } from '../options/platform-auth-options.interface.js';
import type { AssertionKey } from './assertion-key.interface.js';
import { checkedSignature, signatureLength } from './signature.check.js';

/**
 * The application's `signer` (a KMS, Vault Transit, an HSM behind a service) with the certificate's public key: every
 * signature it returns is checked before it is used (`checkedSignature`), at start-up and on every exchange.
 */
export class SignerAssertionKey implements AssertionKey {
  readonly source = 'signer';
  readonly name: string;
  readonly modulusBits: number;
  readonly description: string;
  readonly #signer: PlatformAuthSigner;

  constructor(
    signer: PlatformAuthSigner,
    readonly publicKey: KeyObject,
  ) {
    this.#signer = signer;
    this.name = signerName(signer);
    this.modulusBits = signatureLength(publicKey) * 8;
    this.description = `the application's ${this.name}, checked against the certificate's RSA ${this.modulusBits}-bit public key`;
  }

  sign(signingInput: Uint8Array): Promise<Uint8Array> {
    // A copy: a signer that writes into its input must not change the assertion that goes out.
    return checkedSignature(this, signingInput, () => this.#signer.sign(Uint8Array.from(signingInput)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** `signer`, with the signer's own `name` or class name when it has one that is fit to print. */
function signerName(signer: PlatformAuthSigner): string {
  const own = typeof signer.name === 'string' ? signer.name : undefined;
  const constructorName = (signer as { constructor?: { name?: unknown } }).constructor?.name;
  const className = typeof constructorName === 'string' && constructorName !== 'Object' ? constructorName : undefined;
  const label = [own, className].find((value) => value !== undefined && /^[\w .:/@-]{1,64}$/.test(value));
  return label ? `signer (${label})` : 'signer';
}
