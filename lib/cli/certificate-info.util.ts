import { X509Certificate } from 'node:crypto';
import { certificateValidity, DAY_MS } from '../credentials/certificate.loader.js';
import { normalizePem, pemBlockKinds } from '../credentials/pem.util.js';
import { certificateThumbprint } from '../credentials/thumbprint.util.js';
import { CommandFailure } from './cli.command.js';

interface CertificateInfo {
  readonly subject: string;
  readonly issuer: string;
  readonly selfSigned: boolean;
  /** The portal's form and the assertion's `iss`. */
  readonly thumbprintSha1: string;
  readonly thumbprintSha256: string;
  readonly notBefore: string;
  readonly notAfter: string;
  readonly state: 'valid' | 'expired' | 'not-yet-valid';
  /** Days until `notAfter`, rounded: a certificate made for 10 days shows 10, not 9 days and 23 hours. */
  readonly daysToExpiry: number;
  readonly publicKey: { readonly type: string; readonly bits?: number };
}

export function describeCertificate(certificate: X509Certificate, nowMs: number): CertificateInfo {
  const { notBeforeMs, notAfterMs, state, daysToExpiry } = certificateValidity(certificate, nowMs);
  const key = certificate.publicKey;
  return {
    subject: oneLineName(certificate.subject),
    issuer: oneLineName(certificate.issuer),
    selfSigned: isSelfSigned(certificate),
    thumbprintSha1: certificateThumbprint(certificate, 'sha1'),
    thumbprintSha256: certificateThumbprint(certificate, 'sha256'),
    notBefore: new Date(notBeforeMs).toISOString(),
    notAfter: new Date(notAfterMs).toISOString(),
    state,
    daysToExpiry,
    publicKey: { type: key.asymmetricKeyType ?? 'unknown', bits: key.asymmetricKeyDetails?.modulusLength },
  };
}

/** `valid until … (N days left)`, or why it is not valid now. */
export function validityText(info: CertificateInfo, nowMs: number): string {
  switch (info.state) {
    case 'expired': {
      const daysAgo = Math.floor((nowMs - Date.parse(info.notAfter)) / DAY_MS);
      return `expired on ${info.notAfter}${daysAgo >= 1 ? ` (${daysAgo} day${daysAgo === 1 ? '' : 's'} ago)` : ''}`;
    }
    case 'not-yet-valid':
      return `not valid before ${info.notBefore}`;
    default:
      return `valid until ${info.notAfter} (${info.daysToExpiry} day${info.daysToExpiry === 1 ? '' : 's'} left)`;
  }
}

interface ParsedCertificateFile {
  readonly certificate: X509Certificate;
  readonly encoding: 'PEM' | 'DER';
}

/**
 * A certificate file as integrators have them: PEM (what the portal and the module take) or DER. Anything else is
 * named — a private key in particular, so that nobody goes on passing that file around.
 */
export function parseCertificateFile(content: Buffer, source: string): ParsedCertificateFile {
  const text = content.toString('utf8');
  const kinds = pemBlockKinds(text);
  if (kinds.length === 0) {
    try {
      return { certificate: new X509Certificate(content), encoding: 'DER' };
    } catch {
      throw new CommandFailure(`${source} is neither a PEM nor a DER X.509 certificate`);
    }
  }
  if (!kinds.includes('certificate')) {
    const found = kinds.some((kind) => kind.endsWith('private-key'))
      ? 'a private key, not a certificate (keep that file secret; the certificate is publickey.cer)'
      : kinds.includes('public-key')
        ? 'a bare public key, not a certificate'
        : 'no certificate';
    throw new CommandFailure(`${source} holds ${found}`);
  }
  if (kinds.length > 1) {
    throw new CommandFailure(
      `${source} holds ${kinds.length} PEM blocks; a system integration has exactly one certificate, keep it in a file of its own`,
    );
  }
  try {
    return { certificate: new X509Certificate(normalizePem(text)), encoding: 'PEM' };
  } catch {
    throw new CommandFailure(`${source} has a CERTIFICATE block that is not a valid X.509 certificate`);
  }
}

function oneLineName(name: string): string {
  return name.split('\n').filter(Boolean).join(', ');
}

function isSelfSigned(certificate: X509Certificate): boolean {
  try {
    return certificate.subject === certificate.issuer && certificate.verify(certificate.publicKey);
  } catch {
    return false;
  }
}
