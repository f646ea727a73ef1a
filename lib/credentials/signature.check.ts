import { constants, createHash, publicDecrypt, verify, type KeyObject } from 'node:crypto';
import { AssertionSigningError, type SignatureFault } from '../platform-auth.errors.js';
import type { AssertionKey } from './assertion-key.interface.js';
import { boundedBy } from '../util/bounded.util.js';

/** What a wrong signature most likely is, in words that say what to change. */
interface SignatureVerdict {
  readonly fault: SignatureFault;
  readonly cause: string;
  /** Bytes returned, when bytes were returned. */
  readonly signatureBytes?: number;
}

/** How long one signature by a signer or a token may take; a hung KMS must not hang every caller of the token. */
const SIGNATURE_TIMEOUT_MS = 10_000;

/** ASN.1 DigestInfo prefixes (RFC 8017 §9.2, note 1) of the hashes a misconfigured signer might use. */
const DIGEST_INFO: Readonly<Record<'sha1' | 'sha256' | 'sha384' | 'sha512', Buffer>> = {
  sha1: Buffer.from('3021300906052b0e03021a05000414', 'hex'),
  sha256: Buffer.from('3031300d060960864801650304020105000420', 'hex'),
  sha384: Buffer.from('3041300d060960864801650304020205000430', 'hex'),
  sha512: Buffer.from('3051300d060960864801650304020305000440', 'hex'),
};

/** Bytes of an RSA signature made with `publicKey`: the modulus length. */
export function signatureLength(publicKey: KeyObject): number {
  return Math.ceil((publicKey.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
}

/**
 * `undefined` when `signature` is an RS256 signature (RSASSA-PKCS1-v1_5, SHA-256) of `input` by `publicKey`'s key;
 * otherwise the likely mistake. A valid PKCS#1 v1.5 signature can be opened with the public key, so what it signed
 * (a DigestInfo of which hash, of which bytes) tells the double digest, the missing DigestInfo and the wrong hash
 * apart; a PSS signature is recognised by verifying it as one; anything else was made with another key.
 */
function checkRs256Signature(
  publicKey: KeyObject,
  input: Uint8Array,
  signature: unknown,
): SignatureVerdict | undefined {
  const expected = signatureLength(publicKey);
  if (!(signature instanceof Uint8Array)) {
    const what = typeof signature === 'string' ? 'a string' : signature === null ? 'null' : typeof signature;
    return {
      fault: 'not-bytes',
      cause: `it returned ${what} instead of the signature's bytes (a Uint8Array or Buffer of ${expected} bytes); decode a base64 or base64url answer first`,
    };
  }
  const bytes = signature.length;
  if (bytes !== expected)
    return { fault: 'wrong-length', cause: lengthCause(signature, expected), signatureBytes: bytes };
  if (verify('sha256', input, { key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signature)) return undefined;

  const digest = createHash('sha256').update(input).digest();
  const signed = openPkcs1(publicKey, signature);
  if (signed) {
    if (signed.equals(digestInfo('sha256', createHash('sha256').update(digest).digest()))) {
      return {
        fault: 'double-digest',
        signatureBytes: bytes,
        cause:
          'it signs the SHA-256 of the SHA-256 of the input: the input was hashed before the KMS hashed it again. Send the digest marked as a digest (AWS KMS MessageType DIGEST, Vault Transit prehashed=true), or the input itself as a message, not both',
      };
    }
    if (signed.equals(digest)) {
      return {
        fault: 'bare-digest',
        signatureBytes: bytes,
        cause:
          "it signs the bare SHA-256 digest without its DigestInfo prefix (a raw RSA PKCS#1 mode such as CKM_RSA_PKCS or Vault Transit's hash_algorithm=none); use RSASSA-PKCS1-v1_5 with SHA-256",
      };
    }
    for (const hash of ['sha1', 'sha384', 'sha512'] as const) {
      if (signed.equals(digestInfo(hash, createHash(hash).update(input).digest()))) {
        return {
          fault: 'other-hash',
          signatureBytes: bytes,
          cause: `it is an RSASSA-PKCS1-v1_5 signature with ${hash.toUpperCase()}; RS256 needs SHA-256`,
        };
      }
    }
    return {
      fault: 'other-input',
      signatureBytes: bytes,
      cause:
        "it was made with the certificate's key, but over other bytes than the signing input it was given: the signer must sign the exact bytes it receives (not a decoded, re-encoded or text form of them)",
    };
  }
  const pss = verify(
    'sha256',
    input,
    { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO },
    signature,
  );
  if (pss) {
    return {
      fault: 'pss',
      signatureBytes: bytes,
      cause:
        'it is an RSASSA-PSS signature; the platform verifies RS256, RSASSA-PKCS1-v1_5 with SHA-256 (AWS KMS RSASSA_PKCS1_V1_5_SHA_256, Azure Key Vault RS256, Google Cloud KMS RSA_SIGN_PKCS1_2048_SHA256, Vault Transit signature_algorithm=pkcs1v15)',
    };
  }
  return {
    fault: 'wrong-key',
    signatureBytes: bytes,
    cause:
      'it was not made with the key of the configured certificate: the signer uses another key (check its key id, ARN or name against the certificate registered on the system integration), or the certificate belongs to another key',
  };
}

/** What a PKCS#1 v1.5 signature signed (the DigestInfo, or whatever was padded), or `undefined` when it is not one. */
function openPkcs1(publicKey: KeyObject, signature: Uint8Array): Buffer | undefined {
  try {
    return publicDecrypt({ key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch {
    return undefined;
  }
}

function digestInfo(hash: keyof typeof DIGEST_INFO, digest: Buffer): Buffer {
  return Buffer.concat([DIGEST_INFO[hash], digest]);
}

function lengthCause(signature: Uint8Array, expected: number): string {
  const text = Buffer.from(signature).toString('latin1');
  if (/^[0-9a-f]+$/i.test(text) && text.length === expected * 2) {
    return `it returned ${signature.length} bytes of hex text; an RS256 signature is ${expected} raw bytes: decode it (Buffer.from(text, 'hex'))`;
  }
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text) && Buffer.from(text, 'base64').length === expected) {
    return `it returned ${signature.length} bytes of base64 text; an RS256 signature is ${expected} raw bytes: decode it (Buffer.from(text, 'base64'))`;
  }
  return `it returned ${signature.length} bytes; an RS256 signature with the certificate's ${expected * 8}-bit key is ${expected} bytes: the value is truncated or padded, or made by a key of another size`;
}

/** How messages name a key: "the signer (KmsSigner)", "the PKCS#11 key pkcs11:token=…;object=…". */
function keyPhrase(key: Pick<AssertionKey, 'source' | 'name'>): string {
  return key.source === 'pkcs11' ? `the PKCS#11 key ${key.name}` : `the ${key.name}`;
}

/**
 * One signature by a token or a signer, bounded in time and checked against the certificate's public key before it
 * is used: a wrong one rejects with an `AssertionSigningError` (`bad-signature`) naming the likely cause, so nothing
 * reaches the platform.
 */
export async function checkedSignature(
  key: Pick<AssertionKey, 'source' | 'name' | 'publicKey'>,
  input: Uint8Array,
  produce: () => Promise<unknown>,
): Promise<Uint8Array> {
  const source = key.source === 'pkcs11' ? 'pkcs11' : 'signer';
  const late = () =>
    new AssertionSigningError(
      `${keyPhrase(key)} did not sign within ${SIGNATURE_TIMEOUT_MS / 1000} s; nothing was sent to the platform`,
      { keySource: source, key: key.name, reason: 'timeout' },
    );
  let signature: unknown;
  try {
    signature = await boundedBy(produce(), SIGNATURE_TIMEOUT_MS, late);
  } catch (error) {
    if (error instanceof AssertionSigningError) throw error;
    const detail = errorName(error);
    throw new AssertionSigningError(`${keyPhrase(key)} failed to sign (${detail}); nothing was sent to the platform`, {
      keySource: source,
      key: key.name,
      reason: 'failed',
      detail,
    });
  }
  const verdict = checkRs256Signature(key.publicKey, input, signature);
  if (!verdict) return signature as Uint8Array;
  throw new AssertionSigningError(
    `${keyPhrase(key)} returned a signature that does not verify with the certificate's public key: ${verdict.cause}. Nothing was sent to the platform.`,
    {
      reason: 'bad-signature',
      keySource: source,
      key: key.name,
      fault: verdict.fault,
      signatureBytes: verdict.signatureBytes,
      expectedBytes: signatureLength(key.publicKey),
    },
  );
}

/** A class-like name: no spaces, no line breaks, nothing a log line could be forged with or a secret could fit in. */
const PLAIN_NAME = /^[A-Za-z_$][\w$.-]{0,63}$/;

/**
 * An error's name (and its `code` when it has a short one: `CKR_PIN_INCORRECT`, `AccessDeniedException`), never its
 * message: what a signer throws is not ours to print, and may quote what it was given. A name that is not a plain
 * identifier is reported as `Error`: a KMS client may put service text, or a line break, in it.
 */
export function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const name = typeof error.name === 'string' && PLAIN_NAME.test(error.name) ? error.name : 'Error';
  const code = (error as { code?: unknown }).code;
  const pkcs11 = /^CKR_[A-Z_]+$/.test(error.message) ? error.message : undefined;
  const shown = pkcs11 ?? (typeof code === 'string' && /^[\w.-]{1,64}$/.test(code) ? code : undefined);
  return shown && shown !== name ? `${name} ${shown}` : name;
}
