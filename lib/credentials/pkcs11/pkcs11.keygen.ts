import { randomBytes } from 'node:crypto';
import { EXPECTED_RSA_MODULUS_BITS } from '../../options/options.constants.js';
import { CK, Pkcs11SetupError, pkcs11ReturnValue, type Handle } from './pkcs11.binding.js';
import { Pkcs11AssertionKey } from './pkcs11.assertion-key.js';
import {
  attribute,
  connectToken,
  describeKeyAttributes,
  findObjects,
  flagAttribute,
  rsaPublicKey,
} from './pkcs11.token.js';
import type { Pkcs11Uri } from './pkcs11-uri.parser.js';

/** The attributes keygen sets on the private key and reads back: the key can be used inside the token only. */
interface TokenKeyAttributes {
  readonly token: boolean;
  readonly private: boolean;
  readonly sensitive: boolean;
  readonly extractable: boolean;
  readonly alwaysSensitive?: boolean;
  readonly neverExtractable?: boolean;
}

interface GeneratedTokenKey {
  /** The new key, ready to sign (a self-signed certificate, say); close it when done. */
  readonly key: Pkcs11AssertionKey;
  readonly label: string;
  /** The pair's CKA_ID: the URI's `id`, or 16 random bytes. */
  readonly id: Buffer;
  readonly attributes: TokenKeyAttributes;
}

/**
 * Generates an RSA-2048 pair inside the token the URI names (CKM_RSA_PKCS_KEY_PAIR_GEN): the private key stays on
 * the token (CKA_TOKEN), is sensitive and never extractable, and may only sign (no decrypt, unwrap or derive); the
 * public key is stored beside it with the same label and id. Refuses to add a key whose label or id is already
 * taken: a key in use is never shadowed. Failures are `Pkcs11SetupError`s naming the step.
 */
export async function generateKeyInToken(uri: Pkcs11Uri): Promise<GeneratedTokenKey> {
  const label = uri.object;
  if (label === undefined) throw new Pkcs11SetupError('keygen needs object=LABEL in the URI to name the new key');
  const connection = await connectToken(uri, { readWrite: true });
  const { functions, session } = connection;
  let handed = false;
  try {
    for (const selector of [{ object: label }, ...(uri.id ? [{ id: uri.id }] : [])]) {
      const taken = [CK.CKO_PRIVATE_KEY, CK.CKO_PUBLIC_KEY].some(
        (objectClass) => findObjects(functions, session, objectClass, selector).length > 0,
      );
      if (taken) {
        throw new Pkcs11SetupError(
          `token '${connection.label}' already has a key with ${describeKeyAttributes(selector)}; keygen never replaces or shadows a key: choose another object= (and id=)`,
        );
      }
    }
    const id = uri.id ?? randomBytes(16);
    const common = [
      { type: CK.CKA_TOKEN, value: true },
      { type: CK.CKA_LABEL, value: label },
      { type: CK.CKA_ID, value: id },
    ];
    let pair: { readonly publicKey: Handle; readonly privateKey: Handle };
    try {
      pair = await functions.C_GenerateKeyPairAsync(
        session,
        { mechanism: CK.CKM_RSA_PKCS_KEY_PAIR_GEN },
        [
          ...common,
          { type: CK.CKA_VERIFY, value: true },
          { type: CK.CKA_ENCRYPT, value: false },
          { type: CK.CKA_WRAP, value: false },
          { type: CK.CKA_MODULUS_BITS, value: EXPECTED_RSA_MODULUS_BITS },
          { type: CK.CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) },
        ],
        [
          ...common,
          { type: CK.CKA_PRIVATE, value: true },
          { type: CK.CKA_SENSITIVE, value: true },
          { type: CK.CKA_EXTRACTABLE, value: false },
          { type: CK.CKA_SIGN, value: true },
          { type: CK.CKA_DECRYPT, value: false },
          { type: CK.CKA_UNWRAP, value: false },
          { type: CK.CKA_DERIVE, value: false },
        ],
      );
    } catch (error) {
      throw new Pkcs11SetupError(
        `token '${connection.label}' could not generate an RSA-2048 key pair (${pkcs11ReturnValue(error) ?? 'unknown error'})`,
      );
    }
    const attributes = readAttributes(connection.functions, session, pair.privateKey);
    if (!attributes.token || !attributes.sensitive || attributes.extractable) {
      throw new Pkcs11SetupError(
        `token '${connection.label}' did not keep the new key sensitive and never extractable; it is not used`,
      );
    }
    const modulus = attribute(functions, session, pair.publicKey, CK.CKA_MODULUS);
    const exponent = attribute(functions, session, pair.publicKey, CK.CKA_PUBLIC_EXPONENT);
    if (!modulus || !exponent) {
      throw new Pkcs11SetupError(`token '${connection.label}' does not show the new public key's modulus`);
    }
    const key = new Pkcs11AssertionKey(
      connection,
      { ...uri, id },
      pair.privateKey,
      rsaPublicKey(modulus, exponent),
      true,
    );
    handed = true;
    return { key, label, id, attributes };
  } finally {
    if (!handed) connection.close();
  }
}

/** The private key's custody attributes as the token reports them. */
function readAttributes(
  functions: Parameters<typeof flagAttribute>[0],
  session: Handle,
  privateKey: Handle,
): TokenKeyAttributes {
  const read = (type: number) => flagAttribute(functions, session, privateKey, type);
  return {
    token: read(CK.CKA_TOKEN) === true,
    private: read(CK.CKA_PRIVATE) === true,
    sensitive: read(CK.CKA_SENSITIVE) === true,
    extractable: read(CK.CKA_EXTRACTABLE) !== false,
    alwaysSensitive: read(CK.CKA_ALWAYS_SENSITIVE),
    neverExtractable: read(CK.CKA_NEVER_EXTRACTABLE),
  };
}
