import type { KeyObject, X509Certificate } from 'node:crypto';
import type { PlatformAuthOptions, ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';
import type { ConfigReport } from '../options/config.report.js';
import { checkValidity, loadCertificate } from './certificate.loader.js';
import { loadPrivateKey } from './private-key.loader.js';
import { certificateThumbprint, normalizeThumbprint, thumbprintFormatProblem } from './thumbprint.util.js';

export type CredentialSources = Pick<
  PlatformAuthOptions,
  | 'privateKey'
  | 'privateKeyPath'
  | 'privateKeyPassphrase'
  | 'certificate'
  | 'certificatePath'
  | 'thumbprint'
  | 'thumbprintAlgorithm'
>;

export interface LoadedCredentials {
  /** Parsed once; reused for every signature. */
  readonly privateKey: KeyObject;
  readonly certificate?: X509Certificate;
  /** The assertion's `iss`. */
  readonly thumbprint: string;
  readonly thumbprintAlgorithm: ThumbprintAlgorithm;
}

/**
 * Reads and checks the key, the certificate and the thumbprint. Every problem goes to `report`; the result is
 * `undefined` when any was found. Messages name settings and paths, never content of the files.
 */
export function loadCredentials(
  sources: CredentialSources,
  nowMs: number,
  report: ConfigReport,
): LoadedCredentials | undefined {
  const algorithm = sources.thumbprintAlgorithm ?? 'sha1';
  if (algorithm !== 'sha1' && algorithm !== 'sha256') {
    report.problem('thumbprintAlgorithm', `must be 'sha1' or 'sha256'`);
  }
  const privateKey = loadPrivateKey(sources, report);
  const certificate = loadCertificate(sources, report);

  if (privateKey && certificate && !certificate.x509.checkPrivateKey(privateKey)) {
    report.problem(
      certificate.source,
      `the certificate (${describeSource(sources, 'certificate')}) does not match the private key (${describeSource(sources, 'privateKey')}): it was made from another key; configure the pair keygen wrote together, or the certificate registered for this key`,
    );
  }
  if (certificate) checkValidity(certificate.x509, certificate.source, nowMs, report);

  const thumbprint = resolveThumbprint(sources, certificate?.x509, algorithm, report);
  if (!privateKey || !thumbprint || report.problems.length > 0) return undefined;
  return { privateKey, certificate: certificate?.x509, thumbprint, thumbprintAlgorithm: algorithm };
}

function resolveThumbprint(
  sources: CredentialSources,
  certificate: X509Certificate | undefined,
  algorithm: ThumbprintAlgorithm,
  report: ConfigReport,
): string | undefined {
  const configured = sources.thumbprint === undefined ? undefined : normalizeThumbprint(sources.thumbprint);
  if (configured !== undefined) {
    const formatProblem = thumbprintFormatProblem(configured, algorithm);
    if (formatProblem) {
      report.problem('thumbprint', formatProblem);
      return undefined;
    }
  }
  if (certificate) {
    const computed = certificateThumbprint(certificate, algorithm);
    if (configured !== undefined && configured !== computed) {
      report.problem(
        'thumbprint',
        `differs from the certificate's ${algorithm} thumbprint ${computed}; the portal's thumbprint must be that of the configured certificate`,
      );
      return undefined;
    }
    return computed;
  }
  if (configured === undefined) {
    if (!sources.certificate && !sources.certificatePath) {
      report.problem(
        'certificate',
        'set certificate/certificatePath (preferred) or thumbprint, so that the assertion has an iss',
      );
    }
    return undefined;
  }
  return configured;
}

/** Where a credential came from, as a user recognises it: the file's path, or the option holding the PEM text. */
function describeSource(sources: CredentialSources, kind: 'certificate' | 'privateKey'): string {
  const path = kind === 'certificate' ? sources.certificatePath : sources.privateKeyPath;
  return path !== undefined ? `file ${path}` : `${kind} PEM text`;
}
