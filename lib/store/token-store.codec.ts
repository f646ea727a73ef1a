import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, type CompactDecryptGetKey } from 'jose';
import type { IssuedToken } from '../token/token.cache.js';

/** A failed exchange, shared so the fleet fails fast together until `retryAtMs`. Only non-secret fields. */
export interface SharedFailure {
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

export interface EncryptionKey {
  /** Key id in the JWE header: a short hash of the key, the same on every replica, so no one has to name keys. */
  readonly kid: string;
  /** A `KeyObject`, which no dump renders: the key is never kept as bytes or text. */
  readonly key: KeyObject;
}

export const ENCRYPTION_KEY_BYTES = 32;
/**
 * A random 32-byte key has about 30 distinct byte values; fewer than 16 happens by chance with a probability far
 * below 1e-12, and marks a key made by hand (all zero, a repeated pattern, a counter).
 */
const MIN_DISTINCT_KEY_BYTES = 16;
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
    if (new Set(bytes).size < MIN_DISTINCT_KEY_BYTES) {
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

/**
 * The namespace of one integration on one platform: a hash, so key names carry no URL or machineId, and staging and
 * production (or two integrations) never share an entry. Not the certificate: a token is the integration's whichever
 * registered pair obtained it, so replicas on either side of a certificate rotation (switched to the next pair, or
 * restarted with the promoted files) share one token.
 */
export interface NamespaceInput {
  readonly tokenUrl: string;
  readonly audience: string;
  readonly machineId: string;
}

export function namespaceOf(identity: NamespaceInput): string {
  return hashOf('platform-auth namespace', identity.tokenUrl, identity.audience, identity.machineId)
    .slice(0, 32)
    .replace(/[{}]/g, '');
}

/** A token's `after`: tags of the tokens refused (401) on the writing replica before its exchange started. */
type Sealed =
  { kind: 'token'; token: IssuedToken; after?: readonly string[] } | { kind: 'failure'; failure: SharedFailure };

/**
 * Encrypts and authenticates what goes into the store (JWE `dir` + `A256GCM`), binding each payload to its
 * namespace, kind and version so an entry copied from another key, or a version rewritten in place, reads as a miss.
 */
export class TokenStoreCodec {
  private readonly getKey: CompactDecryptGetKey;

  constructor(
    private readonly keys: readonly EncryptionKey[],
    private readonly namespace: string,
  ) {
    const byKid = new Map(keys.map((entry) => [entry.kid, entry.key]));
    this.getKey = (header) => {
      const key = header.kid === undefined ? undefined : byKid.get(header.kid);
      if (!key) throw new Error('unknown key id');
      return key;
    };
  }

  seal(sealed: Sealed, version: number): Promise<string> {
    const [current] = this.keys;
    const plaintext = new TextEncoder().encode(JSON.stringify({ ns: this.namespace, version, ...sealed }));
    return new CompactEncrypt(plaintext)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: current.kid })
      .encrypt(current.key);
  }

  /** The sealed value, or `undefined` for anything that does not decrypt and verify: a miss, never an error. */
  async open<K extends Sealed['kind']>(
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
      if (value.ns !== this.namespace || value.kind !== kind || value.version !== version) return undefined;
      return value as Extract<Sealed, { kind: K }>;
    } catch {
      return undefined;
    }
  }
}
