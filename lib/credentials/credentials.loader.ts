import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import {
  CERTIFICATE_EXPIRY_WARNING_DAYS,
  EXPECTED_RSA_MODULUS_BITS,
  MIN_RSA_MODULUS_BITS,
} from '../options/options.constants.js';
import type { PlatformAuthOptions, ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';
import { quotable, type ConfigReport } from '../options/config.report.js';
import { describeFsError } from './fs-error.util.js';
import { isLegacyEncryptedPem, normalizePem, pemBlockKinds } from './pem.util.js';
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

const DAY_MS = 24 * 60 * 60 * 1000;

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
      'the certificate does not match the private key (it was made from another key); upload or configure the certificate generated from this key',
    );
  }
  if (certificate) checkValidity(certificate.x509, certificate.source, nowMs, report);

  const thumbprint = resolveThumbprint(sources, certificate?.x509, algorithm, report);
  if (!privateKey || !thumbprint || report.problems.length > 0) return undefined;
  return { privateKey, certificate: certificate?.x509, thumbprint, thumbprintAlgorithm: algorithm };
}

function readSource(
  inline: string | undefined,
  path: string | undefined,
  inlineOption: string,
  pathOption: string,
  what: string,
  report: ConfigReport,
): { text: string; option: string } | undefined {
  if (inline !== undefined && path !== undefined) {
    report.problem(inlineOption, `set only one of ${inlineOption} and ${pathOption}`);
    return undefined;
  }
  if (path !== undefined) {
    if (typeof path !== 'string' || quotable(path) === undefined) {
      report.problem(
        pathOption,
        `is not a file path${typeof path === 'string' ? ' (it looks like PEM text)' : ''}; put PEM text in ${inlineOption} instead`,
      );
      return undefined;
    }
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      report.problem(pathOption, `cannot read ${what} file '${path}': ${describeFsError(error)}`);
      return undefined;
    }
    if (text.trim() === '') {
      report.problem(pathOption, `${what} file '${path}' is empty`);
      return undefined;
    }
    return { text: normalizePem(text), option: pathOption };
  }
  if (inline !== undefined) {
    if (typeof inline !== 'string') {
      report.problem(inlineOption, 'must be a string of PEM text');
      return undefined;
    }
    if (inline.trim() === '') {
      report.problem(inlineOption, `is empty`);
      return undefined;
    }
    return { text: normalizePem(inline), option: inlineOption };
  }
  return undefined;
}

function loadPrivateKey(sources: CredentialSources, report: ConfigReport): KeyObject | undefined {
  const source = readSource(
    sources.privateKey,
    sources.privateKeyPath,
    'privateKey',
    'privateKeyPath',
    'private key',
    report,
  );
  if (!source) {
    if (!sources.privateKey && !sources.privateKeyPath) {
      report.problem('privateKey', 'a private key is required: set privateKey (PEM text) or privateKeyPath');
    }
    return undefined;
  }
  const { text, option } = source;
  const kinds = pemBlockKinds(text);
  if (kinds.length === 0) {
    report.problem(
      option,
      'is not PEM text (expected a PEM block labelled PRIVATE KEY; DER and other formats are not accepted)',
    );
    return undefined;
  }
  const keyKinds = kinds.filter((k) => k.endsWith('private-key'));
  if (keyKinds.length === 0) {
    const found = kinds.includes('certificate')
      ? 'a certificate'
      : kinds.includes('public-key')
        ? 'a public key'
        : 'no private key';
    report.problem(option, `holds ${found}, not a private key; the certificate belongs in certificate/certificatePath`);
    return undefined;
  }
  if (keyKinds.length > 1) {
    report.problem(option, `holds ${keyKinds.length} private keys; provide exactly one`);
    return undefined;
  }
  if (keyKinds[0] === 'openssh-private-key') {
    report.problem(option, 'is an OpenSSH key; convert it to PEM (PKCS#8), e.g. `ssh-keygen -p -m PKCS8 -f KEY`');
    return undefined;
  }
  const encrypted = keyKinds[0] === 'encrypted-private-key' || isLegacyEncryptedPem(text);
  const passphrase = sources.privateKeyPassphrase;
  if (encrypted && !passphrase) {
    report.problem(
      option,
      'is encrypted but no passphrase is set (privateKeyPassphrase / PLATFORM_PRIVATE_KEY_PASSPHRASE)',
    );
    return undefined;
  }

  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem', passphrase: encrypted ? passphrase : undefined });
  } catch {
    if (encrypted)
      report.problem('privateKeyPassphrase', `does not decrypt the key in ${settingLabel(option)}: wrong passphrase`);
    else report.problem(option, 'could not be parsed as a private key (damaged or unsupported PEM)');
    return undefined;
  }

  if (key.asymmetricKeyType !== 'rsa') {
    report.problem(
      option,
      `is ${describeKeyType(key.asymmetricKeyType)} key; the platform requires an RSA key (2048 bits, RS256)`,
    );
    return undefined;
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_MODULUS_BITS) {
    report.problem(
      option,
      `is a ${bits}-bit RSA key; at least ${MIN_RSA_MODULUS_BITS} bits are required (the platform expects ${EXPECTED_RSA_MODULUS_BITS})`,
    );
    return undefined;
  }
  if (bits !== EXPECTED_RSA_MODULUS_BITS) {
    report.warn(option, `is a ${bits}-bit RSA key; the platform documents ${EXPECTED_RSA_MODULUS_BITS}-bit keys`);
  }
  return key;
}

function settingLabel(option: string): string {
  return option === 'privateKeyPath' ? 'privateKeyPath' : 'privateKey';
}

function describeKeyType(type: string | undefined): string {
  switch (type) {
    case 'ec':
      return 'an EC';
    case 'ed25519':
      return 'an Ed25519';
    case 'ed448':
      return 'an Ed448';
    case 'rsa-pss':
      return 'an RSA-PSS';
    case 'dsa':
      return 'a DSA';
    default:
      return `a ${type ?? 'unknown'}`;
  }
}

interface LoadedCertificate {
  readonly x509: X509Certificate;
  readonly source: string;
}

function loadCertificate(sources: CredentialSources, report: ConfigReport): LoadedCertificate | undefined {
  const source = readSource(
    sources.certificate,
    sources.certificatePath,
    'certificate',
    'certificatePath',
    'certificate',
    report,
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

function checkValidity(certificate: X509Certificate, option: string, nowMs: number, report: ConfigReport): void {
  const notBefore = Date.parse(certificate.validFrom);
  const notAfter = Date.parse(certificate.validTo);
  if (nowMs < notBefore) {
    report.problem(
      option,
      `is not valid yet (valid from ${new Date(notBefore).toISOString()}); check the system clock or the certificate`,
    );
  } else if (nowMs > notAfter) {
    report.problem(
      option,
      `expired on ${new Date(notAfter).toISOString()}; generate a new key and certificate and register it in the portal`,
    );
  } else if (notAfter - nowMs < CERTIFICATE_EXPIRY_WARNING_DAYS * DAY_MS) {
    const days = Math.floor((notAfter - nowMs) / DAY_MS);
    report.warn(option, `expires in ${days} day(s) (${new Date(notAfter).toISOString()}); plan the rotation now`);
  }
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
