import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { certificateThumbprint, normalizeThumbprint } from '../../lib/credentials/thumbprint.util.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

/** Recorded from `openssl x509 -fingerprint` when the fixture was made; see the fixture file's first line. */
function opensslFingerprint(algorithm: 'sha1' | 'sha256'): string {
  const line = fixture('test-only-certificate.fingerprints.txt')
    .split('\n')
    .find((l) => l.startsWith(`${algorithm} Fingerprint=`));
  return line!.split('=')[1].replace(/:/g, '');
}

describe('certificateThumbprint', () => {
  const certificate = new X509Certificate(fixture('test-only-certificate.pem'));

  it("matches openssl's SHA-1 fingerprint, uppercase hex without separators", () => {
    expect(certificateThumbprint(certificate)).toBe(opensslFingerprint('sha1'));
    expect(certificateThumbprint(certificate)).toMatch(/^[0-9A-F]{40}$/);
  });

  it("matches openssl's SHA-256 fingerprint on request", () => {
    expect(certificateThumbprint(certificate, 'sha256')).toBe(opensslFingerprint('sha256'));
  });

  it('accepts DER bytes as well as a parsed certificate', () => {
    expect(certificateThumbprint(certificate.raw)).toBe(opensslFingerprint('sha1'));
  });

  it('normalises typed thumbprints', () => {
    expect(normalizeThumbprint('d3:a1:4c e1')).toBe('D3A14CE1');
  });
});
