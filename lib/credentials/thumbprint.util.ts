import { createHash, X509Certificate } from 'node:crypto';
import type { ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';

const HEX_LENGTH: Record<ThumbprintAlgorithm, number> = { sha1: 40, sha256: 64 };

/**
 * The certificate thumbprint as the portal shows it: the hash of the certificate's DER encoding, uppercase hex,
 * no separators. The library (for `iss`), the emulator (for its registry) and the command line all call this one
 * function, so the three can never disagree.
 */
export function certificateThumbprint(
  certificate: X509Certificate | Uint8Array,
  algorithm: ThumbprintAlgorithm = 'sha1',
): string {
  const der = certificate instanceof X509Certificate ? certificate.raw : certificate;
  return createHash(algorithm).update(der).digest('hex').toUpperCase();
}

/** A user-typed thumbprint in canonical form: colons, spaces and case ignored. */
export function normalizeThumbprint(value: string): string {
  return value.replace(/[\s:]/g, '').toUpperCase();
}

/** Why `value` (already normalised) cannot be a thumbprint of `algorithm`, or `undefined` when it can. */
export function thumbprintFormatProblem(value: string, algorithm: ThumbprintAlgorithm): string | undefined {
  const length = HEX_LENGTH[algorithm];
  if (!/^[0-9A-F]+$/.test(value)) return `is not hexadecimal (expected ${length} hex characters for ${algorithm})`;
  if (value.length !== length) {
    return `has ${value.length} hex characters; a ${algorithm} thumbprint has ${length}`;
  }
  return undefined;
}
