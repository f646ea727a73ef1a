import type { KeyObject } from 'node:crypto';
import { AssertionSigningError } from '../../platform-auth.errors.js';
import type { AssertionKey } from '../assertion-key.interface.js';
import { checkedSignature } from '../signature.check.js';
import { CK, Pkcs11SetupError, pkcs11ReturnValue, type Handle } from './pkcs11.binding.js';
import { describeKeyAttributes, findObjects, login, type TokenConnection } from './pkcs11.token.js';
import type { Pkcs11Uri } from './pkcs11-uri.parser.js';

/** Sessions one key opens at most: concurrent signatures beyond it wait for a free one. */
const PKCS11_MAX_SESSIONS = 4;

/** Return values after which the sessions are gone (token reset, HSM restarted) and one new login may help. */
const SESSION_LOST = new Set([
  'CKR_SESSION_HANDLE_INVALID',
  'CKR_SESSION_CLOSED',
  'CKR_USER_NOT_LOGGED_IN',
  'CKR_KEY_HANDLE_INVALID',
  'CKR_OBJECT_HANDLE_INVALID',
  'CKR_DEVICE_REMOVED',
  'CKR_TOKEN_NOT_PRESENT',
  'CKR_CRYPTOKI_NOT_INITIALIZED',
]);

/**
 * A private key inside a PKCS#11 token. The token signs (CKM_SHA256_RSA_PKCS), on libuv's threads; each signature
 * is checked against the certificate before it is used. Concurrent signatures share a small pool of sessions (one
 * operation per session at a time, as PKCS#11 requires); sessions the token dropped are replaced after one new login.
 */
export class Pkcs11AssertionKey implements AssertionKey {
  readonly source = 'pkcs11';
  readonly name: string;
  readonly modulusBits: number;
  readonly description: string;
  // True private fields: the PIN and the library's handles must not show when someone inspects the credentials.
  readonly #connection: TokenConnection;
  readonly #uri: Pkcs11Uri;
  #handle: Handle;
  readonly #sessions = new Set<Handle>();
  #idle: Handle[] = [];
  readonly #waiting: ((session: Handle) => void)[] = [];
  #inFlight = 0;
  #drained?: () => void;
  #closed?: Promise<void>;

  constructor(
    connection: TokenConnection,
    uri: Pkcs11Uri,
    handle: Handle,
    readonly publicKey: KeyObject,
    neverLeavesToken: boolean,
  ) {
    this.#connection = connection;
    this.#uri = uri;
    this.#handle = handle;
    this.#sessions.add(connection.session);
    this.#idle.push(connection.session);
    this.name = uri.display;
    this.modulusBits = publicKey.asymmetricKeyDetails?.modulusLength ?? 0;
    this.description = `an RSA ${this.modulusBits}-bit key in PKCS#11 token '${connection.label}' (${describeKeyAttributes(uri)})${neverLeavesToken ? ', sensitive and not extractable' : ''}, signing with CKM_SHA256_RSA_PKCS`;
  }

  async sign(signingInput: Uint8Array): Promise<Uint8Array> {
    if (this.#closed) {
      throw new AssertionSigningError(`${this.name} is closed; nothing was sent to the platform`, {
        keySource: 'pkcs11',
        key: this.name,
        reason: 'closed',
      });
    }
    return checkedSignature(this, signingInput, () => this.#tracked(Buffer.from(signingInput)));
  }

  /** Counted until the token has finished, even when the caller stopped waiting: close() must not cut it off. */
  async #tracked(input: Buffer): Promise<Buffer> {
    this.#inFlight += 1;
    try {
      return await this.#tokenSign(input);
    } finally {
      this.#inFlight -= 1;
      if (this.#inFlight === 0) this.#drained?.();
    }
  }

  /** Waits for signatures in flight, then closes this key's sessions and releases the library. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      const { functions, module } = this.#connection;
      for (const session of this.#sessions) {
        try {
          functions.C_CloseSession(session);
        } catch {
          // Already gone with the token.
        }
      }
      this.#sessions.clear();
      this.#idle = [];
      module.release();
    })();
    return this.#closed;
  }

  async #tokenSign(input: Buffer): Promise<Buffer> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.#acquire();
      let lost = false;
      try {
        const { functions } = this.#connection;
        functions.C_SignInit(session, { mechanism: CK.CKM_SHA256_RSA_PKCS }, this.#handle);
        return await functions.C_SignAsync(session, input, Buffer.alloc(Math.ceil(this.modulusBits / 8)));
      } catch (error) {
        lost = SESSION_LOST.has(pkcs11ReturnValue(error) ?? '');
        if (!lost || attempt > 1) throw error;
      } finally {
        this.#release(session, lost);
      }
      this.#recover();
    }
  }

  async #acquire(): Promise<Handle> {
    const idle = this.#idle.pop();
    if (idle) return idle;
    if (this.#sessions.size < PKCS11_MAX_SESSIONS) {
      const { functions, slot } = this.#connection;
      // Sessions of a process share its login: a new one can sign at once.
      const session = functions.C_OpenSession(slot, CK.CKF_SERIAL_SESSION);
      this.#sessions.add(session);
      return session;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #release(session: Handle, lost: boolean): void {
    if (lost) {
      this.#sessions.delete(session);
      try {
        this.#connection.functions.C_CloseSession(session);
      } catch {
        // The token already dropped it.
      }
      const next = this.#waiting.shift();
      if (next) void this.#acquire().then(next);
      return;
    }
    const next = this.#waiting.shift();
    if (next) next(session);
    else this.#idle.push(session);
  }

  /** The token dropped the sessions (reset, restart): forget them, log in on a new one and find the key again. */
  #recover(): void {
    const { functions, slot, label, pin } = this.#connection;
    for (const session of this.#idle) {
      this.#sessions.delete(session);
      try {
        functions.C_CloseSession(session);
      } catch {
        // Gone already.
      }
    }
    this.#idle = [];
    const session = functions.C_OpenSession(slot, CK.CKF_SERIAL_SESSION);
    this.#sessions.add(session);
    this.#idle.push(session);
    login(functions, session, label, functions.C_GetTokenInfo(slot).flags, pin);
    const found = findObjects(functions, session, CK.CKO_PRIVATE_KEY, this.#uri);
    if (found.length !== 1) throw new Pkcs11SetupError(`the key is no longer in token '${label}'`);
    this.#handle = found[0];
  }
}
