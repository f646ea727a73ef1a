import { createPublicKey, type KeyObject } from 'node:crypto';
import { EXPECTED_RSA_MODULUS_BITS, MIN_RSA_MODULUS_BITS } from '../../options/options.constants.js';
import { AssertionKeyError } from '../../platform-auth.errors.js';
import type { AssertionKey } from '../assertion-key.interface.js';
import { checkedSignature } from '../signature.check.js';
import { CK, Pkcs11SetupError, pkcs11ReturnValue, type Handle } from './pkcs11.binding.js';
import {
  attribute,
  connectToken,
  describeKeyAttributes,
  findObjects,
  flagAttribute,
  login,
  type TokenConnection,
} from './pkcs11.token.js';
import type { Pkcs11Uri } from './pkcs11-uri.parser.js';

/** What start-up learns about the URI, reported on `privateKeyUri`. */
export interface Pkcs11Findings {
  problem(message: string): void;
  warn(message: string): void;
}

/** Sessions one key opens at most: concurrent signatures beyond it wait for a free one. */
export const PKCS11_MAX_SESSIONS = 4;

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
 * Opens the key a `pkcs11:` URI names and checks it as start-up checks a key file: library, token, PIN, the one
 * private key, RSA and its size, signing allowed with CKM_SHA256_RSA_PKCS, and its public half against the
 * certificate's. Problems and warnings go to `findings`; `undefined` when there was a problem.
 */
export async function openPkcs11Key(
  uri: Pkcs11Uri,
  certificateKey: KeyObject | undefined,
  findings: Pkcs11Findings,
): Promise<Pkcs11AssertionKey | undefined> {
  let connection: TokenConnection;
  try {
    connection = await connectToken(uri);
  } catch (error) {
    if (!(error instanceof Pkcs11SetupError)) throw error;
    findings.problem(error.message);
    return undefined;
  }
  // Set until the key takes the connection over: on any other way out, the session is closed and the library released.
  let owned: TokenConnection | undefined = connection;
  let problems = 0;
  const problem = (message: string) => {
    problems += 1;
    findings.problem(message);
  };
  try {
    const handle = findKey(connection, uri);
    const { functions, session, label } = connection;
    const keyType = attribute(functions, session, handle, CK.CKA_KEY_TYPE);
    if (keyType && readUlong(keyType) !== CK.CKK_RSA) {
      problem(`the key in token '${label}' is not an RSA key; the platform requires RSA (2048 bits, RS256)`);
      return undefined;
    }
    const tokenKey = publicKeyOf(connection, handle);
    const bits = tokenKey?.asymmetricKeyDetails?.modulusLength ?? certificateKey?.asymmetricKeyDetails?.modulusLength;
    if (bits !== undefined && bits < MIN_RSA_MODULUS_BITS) {
      problem(
        `the key in token '${label}' is a ${bits}-bit RSA key; at least ${MIN_RSA_MODULUS_BITS} bits are required`,
      );
    } else if (bits !== undefined && bits !== EXPECTED_RSA_MODULUS_BITS) {
      findings.warn(
        `the key in token '${label}' is a ${bits}-bit RSA key; the platform documents ${EXPECTED_RSA_MODULUS_BITS}-bit keys`,
      );
    }
    if (flagAttribute(functions, session, handle, CK.CKA_SIGN) === false) {
      problem(`the key in token '${label}' may not sign (CKA_SIGN is false)`);
    }
    if (flagAttribute(functions, session, handle, CK.CKA_ALWAYS_AUTHENTICATE) === true) {
      problem(
        `the key in token '${label}' needs the PIN again for every signature (CKA_ALWAYS_AUTHENTICATE), which is not supported`,
      );
    }
    const extractable = flagAttribute(functions, session, handle, CK.CKA_EXTRACTABLE);
    const sensitive = flagAttribute(functions, session, handle, CK.CKA_SENSITIVE);
    if (extractable === true || sensitive === false) {
      findings.warn(
        `the key in token '${label}' can leave the token (${extractable ? 'CKA_EXTRACTABLE is true' : 'CKA_SENSITIVE is false'}); a key made with platform-auth keygen --key-uri never can`,
      );
    }
    const mechanism = mechanismFlags(connection);
    if (mechanism !== undefined && (mechanism & CK.CKF_SIGN) === 0) {
      problem(
        `token '${label}' cannot sign with CKM_SHA256_RSA_PKCS (RSASSA-PKCS1-v1_5 with SHA-256), which RS256 needs`,
      );
    }
    if (certificateKey && tokenKey && !samePublicKey(certificateKey, tokenKey)) {
      problem(
        `the key in token '${label}' (${describeKeyAttributes(uri)}) is not the certificate's key: the certificate was made from another key; configure the certificate keygen wrote for this key`,
      );
    }
    const publicKey = certificateKey ?? tokenKey;
    if (problems > 0 || !publicKey) return undefined;
    const key = new Pkcs11AssertionKey(connection, uri, handle, publicKey, extractable === false && sensitive === true);
    owned = undefined;
    return key;
  } catch (error) {
    if (!(error instanceof Pkcs11SetupError)) throw error;
    problem(error.message);
    return undefined;
  } finally {
    owned?.close();
  }
}

/** The one private key with the URI's label and id. */
function findKey(connection: TokenConnection, uri: Pkcs11Uri): Handle {
  const { functions, session, label } = connection;
  const found = findObjects(functions, session, CK.CKO_PRIVATE_KEY, uri);
  if (found.length === 1) return found[0];
  if (found.length > 1) {
    throw new Pkcs11SetupError(
      `several private keys in token '${label}' match ${describeKeyAttributes(uri)}; add id= to choose one`,
    );
  }
  const labels = findObjects(functions, session, CK.CKO_PRIVATE_KEY, {}, 10)
    .map((handle) => attribute(functions, session, handle, CK.CKA_LABEL)?.toString('utf8'))
    .filter((name) => name !== undefined && name !== '')
    .map((name) => `'${name}'`);
  throw new Pkcs11SetupError(
    `token '${label}' has no private key with ${describeKeyAttributes(uri)}; its private keys: ${labels.join(', ') || 'none'} (create one with platform-auth keygen --key-uri)`,
  );
}

/** The key's public half from its modulus and exponent, when the token shows them (most do for private keys). */
function publicKeyOf(connection: TokenConnection, handle: Handle): KeyObject | undefined {
  const { functions, session } = connection;
  const modulus = attribute(functions, session, handle, CK.CKA_MODULUS);
  const exponent = attribute(functions, session, handle, CK.CKA_PUBLIC_EXPONENT);
  if (!modulus?.length || !exponent?.length) return undefined;
  return rsaPublicKey(modulus, exponent);
}

export function rsaPublicKey(modulus: Buffer, exponent: Buffer): KeyObject {
  return createPublicKey({
    key: { kty: 'RSA', n: stripZeros(modulus).toString('base64url'), e: stripZeros(exponent).toString('base64url') },
    format: 'jwk',
  });
}

function stripZeros(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  return value.subarray(start);
}

function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  const left = a.export({ format: 'jwk' });
  const right = b.export({ format: 'jwk' });
  return left.n === right.n && left.e === right.e;
}

function mechanismFlags(connection: TokenConnection): number | undefined {
  try {
    return connection.functions.C_GetMechanismInfo(connection.slot, CK.CKM_SHA256_RSA_PKCS).flags;
  } catch (error) {
    if (pkcs11ReturnValue(error) === 'CKR_MECHANISM_INVALID') return 0;
    return undefined;
  }
}

/** A CK_ULONG attribute in the library's (little-endian) byte order. */
export function readUlong(value: Buffer): number {
  return value.length >= 8 ? Number(value.readBigUInt64LE(0)) : value.readUInt32LE(0);
}

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
      throw new AssertionKeyError(`${this.name} is closed; nothing was sent to the platform`, {
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
