import { createPublicKey, sign, type KeyObject } from 'node:crypto';
import type { AssertionKey } from './assertion-key.interface.js';

/** A PEM key parsed once into a `KeyObject` (checked by the private key loader) and reused for every signature. */
export class InMemoryAssertionKey implements AssertionKey {
  readonly source = 'pem';
  readonly publicKey: KeyObject;
  readonly modulusBits: number;
  readonly description: string;
  // A true private field: the key must not show when someone logs or inspects the credentials.
  readonly #privateKey: KeyObject;

  constructor(
    privateKey: KeyObject,
    readonly name: string,
  ) {
    this.#privateKey = privateKey;
    this.publicKey = createPublicKey(privateKey);
    this.modulusBits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
    this.description = `an RSA ${this.modulusBits}-bit key, from ${name}`;
  }

  /** The parsed key of an in-memory key, for jose, which signs PEM keys (see compact-jws.util); else `undefined`. */
  static keyObject(key: AssertionKey): KeyObject | undefined {
    return key instanceof InMemoryAssertionKey ? key.#privateKey : undefined;
  }

  sign(signingInput: Uint8Array): Promise<Uint8Array> {
    // RSA keys sign with PKCS#1 v1.5 padding unless told otherwise. On libuv's threads, not the event loop: a registry
    // building many tenants at once signs once for each, and a blocked loop would time out their Redis operations.
    return new Promise((resolve, reject) => {
      sign('sha256', signingInput, this.#privateKey, (error, signature) =>
        error ? reject(error) : resolve(signature),
      );
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
