import type { KeyObject } from 'node:crypto';
import { EXPECTED_RSA_MODULUS_BITS, MIN_RSA_MODULUS_BITS } from '../../options/options.constants.js';
import { CK, Pkcs11SetupError, pkcs11ReturnValue, type Handle } from './pkcs11.binding.js';
import { Pkcs11AssertionKey } from './pkcs11.assertion-key.js';
import {
  attribute,
  connectToken,
  describeKeyAttributes,
  findObjects,
  flagAttribute,
  readUlong,
  rsaPublicKey,
  type TokenConnection,
} from './pkcs11.token.js';
import type { Pkcs11Uri } from './pkcs11-uri.parser.js';

/** What start-up learns about the URI, reported on `privateKeyUri`. */
interface Pkcs11Findings {
  problem(message: string): void;
  warn(message: string): void;
}

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
