import { createPrivateKey, type KeyObject } from 'node:crypto';
import { EXPECTED_RSA_MODULUS_BITS, MIN_RSA_MODULUS_BITS } from '../options/options.constants.js';
import type { ConfigReport } from '../options/config.report.js';
import type { CredentialSources } from './credential-sources.interface.js';
import { readSource, type PreReadFiles } from './credential-source.reader.js';
import { isLegacyEncryptedPem, pemBlockKinds } from './pem.util.js';

type PrivateKeySources = Pick<CredentialSources, 'privateKey' | 'privateKeyPath' | 'passphrase' | 'names'>;

/** The RSA private key, parsed once; every problem (format, encryption, type, size) goes to `report`. */
export function loadPrivateKey(
  sources: PrivateKeySources,
  report: ConfigReport,
  files?: PreReadFiles,
): KeyObject | undefined {
  const { names } = sources;
  const source = readSource(
    sources.privateKey,
    sources.privateKeyPath,
    names.privateKey,
    names.privateKeyPath,
    'private key',
    report,
    files,
  );
  if (!source) {
    if (!sources.privateKey && !sources.privateKeyPath) {
      report.problem(
        names.privateKey,
        `a private key is required: set ${names.privateKey} (PEM text) or ${names.privateKeyPath}, or ${names.privateKeyUri} (a key in a PKCS#11 token) or ${names.signer} (a KMS, say)`,
      );
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
    report.problem(
      option,
      `holds ${found}, not a private key; the certificate belongs in ${names.certificate}/${names.certificatePath}`,
    );
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
  const { passphrase } = sources;
  if (encrypted && !passphrase) {
    report.problem(option, `is encrypted but no passphrase is set: set ${report.name(names.passphrase)}`);
    return undefined;
  }

  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem', passphrase: encrypted ? passphrase : undefined });
  } catch {
    if (encrypted) report.problem(names.passphrase, `does not decrypt the key in ${option}: wrong passphrase`);
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
