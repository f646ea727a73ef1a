import type { X509Certificate } from 'node:crypto';
import type { ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';
import type { CredentialSources } from './credential-sources.interface.js';
import type { ConfigReport } from '../options/config.report.js';
import type { AssertionKey } from './assertion-key.interface.js';
import { checkValidity, loadCertificate } from './certificate.loader.js';
import { InMemoryAssertionKey } from './in-memory.assertion-key.js';
import { keySourceKind, openExternalKey } from './key-source.loader.js';
import { loadPrivateKey } from './private-key.loader.js';
import type { PreReadFiles } from './credential-source.reader.js';
import { certificateThumbprint, normalizeThumbprint, thumbprintFormatProblem } from './thumbprint.util.js';

export type { CredentialSources } from './credential-sources.interface.js';

export interface LoadedCredentials {
  /** The key assertions are signed with: a PEM key parsed once, a key in a PKCS#11 token, or the `signer`. */
  readonly key: AssertionKey;
  readonly certificate?: X509Certificate;
  /** The assertion's `iss`. */
  readonly thumbprint: string;
  readonly thumbprintAlgorithm: ThumbprintAlgorithm;
}

/**
 * Reads and checks a PEM key, the certificate and the thumbprint, synchronously (file reloads). Every problem goes to
 * `report`; the result is `undefined` when any was found. Messages name settings and paths, never content of the
 * files. A `pkcs11:` URI or a signer needs {@link openCredentials}.
 */
export function loadCredentials(
  sources: CredentialSources,
  nowMs: number,
  report: ConfigReport,
  files?: PreReadFiles,
): LoadedCredentials | undefined {
  const before = report.problems.length;
  const kind = keySourceKind(sources, report);
  if (kind !== undefined && kind !== 'pem') {
    const { names } = sources;
    report.problem(
      kind === 'pkcs11' ? names.privateKeyUri : names.signer,
      'is opened at start-up only (openCredentials)',
    );
  }
  const key = kind === 'pem' ? loadPemKey(sources, report, files) : undefined;
  const { certificate, thumbprint, algorithm } = certificateAndThumbprint(sources, nowMs, report, key, files);
  if (!key || !thumbprint || report.problems.length > before) return undefined;
  return { key, certificate, thumbprint, thumbprintAlgorithm: algorithm };
}

/**
 * Start-up's reading of the credentials, for every key source: a PEM key as {@link loadCredentials} reads it, or
 * the key of a PKCS#11 token or of the application's signer, opened and proven by one test signature verified with
 * the certificate. Every problem goes to `report`; an opened key is closed again when there is any.
 */
export async function openCredentials(
  sources: CredentialSources,
  nowMs: number,
  report: ConfigReport,
): Promise<LoadedCredentials | undefined> {
  const before = report.problems.length;
  const kind = keySourceKind(sources, report);
  const pemKey = kind === 'pem' ? loadPemKey(sources, report) : undefined;
  const { certificate, thumbprint, algorithm } = certificateAndThumbprint(sources, nowMs, report, pemKey);
  const key =
    kind === 'pkcs11' || kind === 'signer' ? await openExternalKey(kind, sources, certificate, report) : pemKey;
  if (!key || !thumbprint || report.problems.length > before) {
    await key?.close();
    return undefined;
  }
  return { key, certificate, thumbprint, thumbprintAlgorithm: algorithm };
}

/** The certificate (checked against a PEM key, and for validity) and the thumbprint, in the order users read them. */
function certificateAndThumbprint(
  sources: CredentialSources,
  nowMs: number,
  report: ConfigReport,
  pemKey: InMemoryAssertionKey | undefined,
  files?: PreReadFiles,
): { certificate?: X509Certificate; thumbprint?: string; algorithm: ThumbprintAlgorithm } {
  const algorithm = sources.thumbprintAlgorithm ?? 'sha1';
  if (algorithm !== 'sha1' && algorithm !== 'sha256') {
    report.problem('thumbprintAlgorithm', `must be 'sha1' or 'sha256'`);
  }
  const { names } = sources;
  const external = sources.privateKeyUri !== undefined || sources.signer !== undefined;
  if (external && sources.certificate === undefined && sources.certificatePath === undefined) {
    report.problem(
      names.certificate,
      `is required with ${sources.privateKeyUri !== undefined ? names.privateKeyUri : names.signer}: set ${names.certificate} or ${names.certificatePath}; its thumbprint is the assertion's iss and its public key checks every signature (a thumbprint alone cannot)`,
    );
    return { algorithm };
  }
  const certificate = loadCertificate(sources, report, files);
  if (pemKey && certificate && !certificate.x509.publicKey.equals(pemKey.publicKey)) {
    report.problem(
      certificate.source,
      `the certificate (${describeSource(sources, 'certificate')}) does not match the private key (${describeSource(sources, 'privateKey')}): it was made from another key; configure the pair keygen wrote together, or the certificate registered for this key`,
    );
  }
  if (certificate) checkValidity(certificate.x509, certificate.source, nowMs, report);
  const thumbprint = resolveThumbprint(sources, certificate?.x509, algorithm, report);
  return { certificate: certificate?.x509, thumbprint, algorithm };
}

function loadPemKey(
  sources: CredentialSources,
  report: ConfigReport,
  files?: PreReadFiles,
): InMemoryAssertionKey | undefined {
  const privateKey = loadPrivateKey(sources, report, files);
  if (!privateKey) return undefined;
  return new InMemoryAssertionKey(privateKey, describeSource(sources, 'privateKey'));
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
      const { certificate, certificatePath, thumbprint } = sources.names;
      report.problem(
        certificate,
        `set ${certificate}/${certificatePath}${thumbprint ? ` (preferred) or ${thumbprint}` : ''}, so that the assertion has an iss`,
      );
    }
    return undefined;
  }
  return configured;
}

/**
 * Where a credential came from, as a user recognises it: the path option and its file, or the option holding the
 * PEM text (`key.privateKeyPath /etc/platform/key.pem`, `next.certificate PEM text`).
 */
export function describeSource(
  sources: Pick<CredentialSources, 'certificatePath' | 'privateKeyPath' | 'names'>,
  kind: 'certificate' | 'privateKey',
): string {
  const { names } = sources;
  const path = kind === 'certificate' ? sources.certificatePath : sources.privateKeyPath;
  if (path !== undefined) return `${kind === 'certificate' ? names.certificatePath : names.privateKeyPath} ${path}`;
  return `${names[kind]} PEM text`;
}
