import { createPublicKey, sign, type KeyObject } from 'node:crypto';
import type { AssertionKey } from './assertion-key.interface.js';

interface WantedSignature {
  readonly input: Uint8Array;
  readonly resolve: (signature: Uint8Array) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A PEM key parsed once into a `KeyObject` (checked by the private key loader) and reused for every signature.
 *
 * Where it signs: a signature wanted alone (what an integration asks for, once per renewal) is made at once on the
 * event loop, about what `crypto.sign` costs; a round trip through libuv's threads would add a sixth to it. Several
 * wanted in the same turn, or one wanted while another is on the threads, go to libuv's threads, so that a busy
 * process signs on every core. A key's first signature goes to the threads too: a registry that builds many tenants
 * at once signs once with each new key, and on the loop one after the other that would hold up their Redis
 * operations and requests.
 */
export class InMemoryAssertionKey implements AssertionKey {
  readonly source = 'pem';
  readonly publicKey: KeyObject;
  readonly modulusBits: number;
  readonly description: string;
  // A true private field: the key must not show when someone logs or inspects the credentials.
  readonly #privateKey: KeyObject;
  /** Signatures wanted in this turn, made together at its end. */
  #wanted: WantedSignature[] = [];
  #onThreads = 0;
  #signed = false;

  constructor(
    privateKey: KeyObject,
    readonly name: string,
  ) {
    this.#privateKey = privateKey;
    this.publicKey = createPublicKey(privateKey);
    this.modulusBits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
    this.description = `an RSA ${this.modulusBits}-bit key, from ${name}`;
  }

  sign(signingInput: Uint8Array): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.#wanted.push({ input: signingInput, resolve, reject });
      if (this.#wanted.length === 1) queueMicrotask(() => this.#signWanted());
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #signWanted(): void {
    const wanted = this.#wanted;
    this.#wanted = [];
    const alone = wanted.length === 1 && this.#onThreads === 0 && this.#signed;
    for (const one of wanted) {
      try {
        // RSA keys sign with PKCS#1 v1.5 padding unless told otherwise.
        if (alone) one.resolve(sign('sha256', one.input, this.#privateKey));
        else this.#signOnThreads(one);
      } catch (error) {
        one.reject(error);
      }
    }
  }

  #signOnThreads(one: WantedSignature): void {
    sign('sha256', one.input, this.#privateKey, (error, signature) => {
      this.#onThreads -= 1;
      this.#signed = true;
      if (error) one.reject(error);
      else one.resolve(signature);
    });
    this.#onThreads += 1;
  }
}
