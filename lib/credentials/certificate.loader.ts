import { X509Certificate } from 'node:crypto';
import { CERTIFICATE_EXPIRY_WARNING_DAYS } from '../options/options.constants.js';
import type { ConfigReport } from '../options/config.report.js';
import type { CredentialSources } from './credential-sources.interface.js';
import { readSource, type PreReadFiles } from './credential-source.reader.js';
import { pemBlockKinds } from './pem.util.js';

type CertificateSources = Pick<CredentialSources, 'certificate' | 'certificatePath' | 'names'>;

export const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Whole days left until `notAfterMs` (negative once past), rounded down: never more time than there is, and the one
 * count for the start-up report, the CLI, `status()` and the expiry monitor, so that they agree (6 at 6.6 days) and
 * "fewer than N days" holds exactly when the count is under N.
 */
export function daysLeft(notAfterMs: number, nowMs: number): number {
  return Math.floor((notAfterMs - nowMs) / DAY_MS);
}

interface LoadedCertificate {
  readonly x509: X509Certificate;
  readonly source: string;
}

/** The one certificate of the pair's `certificate`/`certificatePath`, parsed; problems go to `report`. */
export function loadCertificate(
  sources: CertificateSources,
  report: ConfigReport,
  files?: PreReadFiles,
): LoadedCertificate | undefined {
  const source = readSource(
    sources.certificate,
    sources.certificatePath,
    sources.names.certificate,
    sources.names.certificatePath,
    'certificate',
    report,
    files,
  );
  if (!source) return undefined;
  const { text, option } = source;
  const kinds = pemBlockKinds(text);
  if (kinds.length === 0) {
    report.problem(
      option,
      'is not PEM text (expected a PEM block labelled CERTIFICATE; DER is not accepted, convert with `openssl x509 -inform der -in CERT -out publickey.cer`)',
    );
    return undefined;
  }
  const certificates = kinds.filter((k) => k === 'certificate').length;
  if (certificates === 0) {
    const found = kinds.some((k) => k.endsWith('private-key'))
      ? 'a private key'
      : kinds.includes('public-key')
        ? 'a bare public key'
        : 'no certificate';
    report.problem(option, `holds ${found}, not a certificate`);
    return undefined;
  }
  if (certificates > 1 || kinds.length > 1) {
    report.problem(
      option,
      `holds ${kinds.length} PEM blocks; provide exactly one certificate (the one registered on the system integration)`,
    );
    return undefined;
  }
  try {
    return { x509: new X509Certificate(text), source: option };
  } catch {
    report.problem(option, 'could not be parsed as an X.509 certificate');
    return undefined;
  }
}

interface CertificateValidity {
  readonly notBeforeMs: number;
  readonly notAfterMs: number;
  readonly state: 'valid' | 'expired' | 'not-yet-valid';
  /** Whole days until `notAfterMs`; negative once expired. */
  readonly daysToExpiry: number;
}

/** Where `nowMs` falls in the certificate's validity period; the one reading of it for start-up and the CLI. */
export function certificateValidity(certificate: X509Certificate, nowMs: number): CertificateValidity {
  const notBeforeMs = Date.parse(certificate.validFrom);
  const notAfterMs = Date.parse(certificate.validTo);
  return {
    notBeforeMs,
    notAfterMs,
    state: nowMs < notBeforeMs ? 'not-yet-valid' : nowMs > notAfterMs ? 'expired' : 'valid',
    daysToExpiry: daysLeft(notAfterMs, nowMs),
  };
}

/** A problem when the certificate is not valid at `nowMs`; a warning when it expires soon. */
export function checkValidity(certificate: X509Certificate, option: string, nowMs: number, report: ConfigReport): void {
  const { notBeforeMs, notAfterMs, state, daysToExpiry } = certificateValidity(certificate, nowMs);
  if (state === 'not-yet-valid') {
    report.problem(
      option,
      `is not valid yet (valid from ${new Date(notBeforeMs).toISOString()}); check the system clock or the certificate`,
    );
  } else if (state === 'expired') {
    report.problem(
      option,
      `expired on ${new Date(notAfterMs).toISOString()}; generate a new key and certificate and register it in the portal`,
    );
  } else if (notAfterMs - nowMs < CERTIFICATE_EXPIRY_WARNING_DAYS * DAY_MS) {
    report.warn(
      option,
      `expires in ${daysToExpiry} day${daysToExpiry === 1 ? '' : 's'} (${new Date(notAfterMs).toISOString()}); plan the rotation now`,
    );
  }
}
