import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, type CompactDecryptGetKey } from 'jose';
import type { TokenExchangeError } from '../platform-auth.errors.js';
import type { IssuedToken } from '../token/token.cache.js';
import { repeatsTooFewBytes } from '../util/key-strength.util.js';

/** A failed exchange, shared so the fleet fails fast together until `retryAtMs`. Only non-secret fields. */
interface SharedFailure {
  readonly retryAtMs: number;
  readonly summary: string;
  readonly reason: string;
  /** The failing replica's verdict, so the fleet answers its callers as that replica does. */
  readonly transient: boolean;
  readonly status?: number;
  readonly oauthError?: string;
  readonly oauthErrorDescription?: string;
  readonly hint: string;
}

/** What the fleet keeps of a failed exchange: its verdict and the words for callers, never the response body. */
export function sharedFailureOf(error: TokenExchangeError, retryAtMs: number): SharedFailure {
  return {
    retryAtMs,
    summary: error.summary,
    reason: error.reason,
    transient: error.transient,
    status: error.status,
    oauthError: error.oauthError,
    oauthErrorDescription: error.oauthErrorDescription,
    hint: error.hint,
  };
}

export interface EncryptionKey {
  /** Key id in the JWE header: a short hash of the key, the same on every replica, so no one has to name keys. */
  readonly kid: string;
  /** A `KeyObject`, which no dump renders: the key is never kept as bytes or text. */
  readonly key: KeyObject;
}

const ENCRYPTION_KEY_BYTES = 32;
/** Any even run of hex digits is read as hex (32 bytes of base64 is 43 or 44 characters, so never mistaken). */
const HEX_KEY = /^(?:[0-9a-f]{2})+$/i;
const BASE64_KEY = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * Parses `PLATFORM_TOKEN_STORE_ENCRYPTION_KEY`: one key, or several separated by commas — the first encrypts, all
 * decrypt, so keys rotate without a fleet-wide miss. Each is 32 bytes as base64 (standard or url-safe) or hex.
 * Returns a problem per bad entry, in words that never contain the key.
 */
export function parseEncryptionKeys(value: string | readonly string[]): EncryptionKey[] | string {
  const entries = (typeof value === 'string' ? value.split(',') : value).map((entry) => entry.trim());
  if (entries.length === 0 || entries.every((entry) => entry === '')) return 'is required with a token store';
  const keys: EncryptionKey[] = [];
  for (const [index, entry] of entries.entries()) {
    const which = entries.length > 1 ? `entry ${index + 1} ` : '';
    const bytes = decodeKey(entry);
    if (bytes === undefined) return `${which}is not base64 or hex`;
    if (bytes.length !== ENCRYPTION_KEY_BYTES) {
      return `${which}decodes to ${bytes.length} bytes; it must be ${ENCRYPTION_KEY_BYTES} random bytes (e.g. \`openssl rand -base64 32\`)`;
    }
    if (repeatsTooFewBytes(bytes)) {
      return `${which}repeats too few distinct bytes to be random (all zero, a pattern); use \`openssl rand -base64 32\``;
    }
    keys.push({ kid: hashOf('platform-auth token-store key', bytes).slice(0, 11), key: createSecretKey(bytes) });
    bytes.fill(0);
  }
  return keys;
}

function decodeKey(text: string): Buffer | undefined {
  if (HEX_KEY.test(text)) return Buffer.from(text, 'hex');
  if (!BASE64_KEY.test(text)) return undefined;
  return Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

function hashOf(label: string, ...parts: (string | Uint8Array)[]): string {
  const hash = createHash('sha256').update(label);
  for (const part of parts) hash.update('\0').update(part);
  return hash.digest('base64url');
}

/** The tag of a token entry: lets a replica delete "this token, if still stored" without holding the ciphertext. */
export function fingerprintOf(accessToken: string): string {
  return hashOf('platform-auth token fingerprint', accessToken);
}

/** A token's `after`: tags of the tokens refused (401) on the writing replica before its exchange started. */
type Sealed =
  { kind: 'token'; token: IssuedToken; after?: readonly string[] } | { kind: 'failure'; failure: SharedFailure };

/**
 * Encrypts and authenticates what goes into the store (JWE `dir` + `A256GCM`), binding each payload to its
 * namespace (the key pair's: see `StoreNamespaces`), kind and version, so an entry copied from another key, or a
 * version rewritten in place, reads as a miss.
 */
export class TokenStoreCodec {
  private readonly getKey: CompactDecryptGetKey;

  constructor(private readonly keys: readonly EncryptionKey[]) {
    const byKid = new Map(keys.map((entry) => [entry.kid, entry.key]));
    this.getKey = (header) => {
      const key = header.kid === undefined ? undefined : byKid.get(header.kid);
      if (!key) throw new Error('unknown key id');
      return key;
    };
  }

  seal(namespace: string, sealed: Sealed, version: number): Promise<string> {
    const [current] = this.keys;
    const plaintext = new TextEncoder().encode(JSON.stringify({ ns: namespace, version, ...sealed }));
    return new CompactEncrypt(plaintext)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: current.kid })
      .encrypt(current.key);
  }

  /** The sealed value, or `undefined` for anything that does not decrypt and verify: a miss, never an error. */
  async open<K extends Sealed['kind']>(
    namespace: string,
    payload: string,
    kind: K,
    version: number,
  ): Promise<Extract<Sealed, { kind: K }> | undefined> {
    try {
      const { plaintext } = await compactDecrypt(payload, this.getKey, {
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      const value = JSON.parse(new TextDecoder().decode(plaintext)) as Record<string, unknown>;
      if (value.ns !== namespace || value.kind !== kind || value.version !== version) return undefined;
      return value as Extract<Sealed, { kind: K }>;
    } catch {
      return undefined;
    }
  }
}
