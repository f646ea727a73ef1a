import type { KeyObject } from 'node:crypto';
import { EncryptJWT, errors as joseErrors, jwtDecrypt, type JWTPayload } from 'jose';

/**
 * Encrypted and authenticated values the app hands to the browser and gets back: compact JWE, `dir` + `A256GCM`,
 * so the browser can neither read nor alter them and any replica holding the same key can open them.
 */
type OpenResult<T> = { ok: true; value: T } | { ok: false; expired: boolean };

const HEADER = { alg: 'dir', enc: 'A256GCM', typ: 'JWT' } as const;

export async function seal(
  claims: JWTPayload,
  key: KeyObject,
  audience: string,
  nowMs: number,
  expiresAtMs: number,
): Promise<string> {
  return new EncryptJWT(claims)
    .setProtectedHeader(HEADER)
    .setAudience(audience)
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(Math.floor(expiresAtMs / 1000))
    .encrypt(key);
}

/** The claims, or why not: expired, or anything else (tampered, another key or audience, not a JWE at all). */
export async function unseal<T>(
  value: unknown,
  key: KeyObject,
  audience: string,
  nowMs: number,
  read: (payload: JWTPayload) => T | undefined,
): Promise<OpenResult<T>> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 16 * 1024) return { ok: false, expired: false };
  try {
    const { payload } = await jwtDecrypt(value, key, {
      audience,
      currentDate: new Date(nowMs),
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
      requiredClaims: ['exp', 'iat'],
    });
    const result = read(payload);
    return result === undefined ? { ok: false, expired: false } : { ok: true, value: result };
  } catch (error) {
    return { ok: false, expired: error instanceof joseErrors.JWTExpired };
  }
}

export function stringClaim(payload: JWTPayload, name: string): string | undefined {
  const value = payload[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}
