import { randomBytes, type X509Certificate } from 'node:crypto';
import type { ConfigReport } from '../options/config.report.js';
import type { CredentialSources } from './credential-sources.interface.js';
import { AssertionSigningError } from '../platform-auth.errors.js';
import type { AssertionKey } from './assertion-key.interface.js';
import { openPkcs11Key } from './pkcs11/pkcs11-key.opener.js';
import { parsePkcs11Uri } from './pkcs11/pkcs11-uri.parser.js';
import { SignerAssertionKey } from './signer.assertion-key.js';

type KeySources = Pick<
  CredentialSources,
  'privateKey' | 'privateKeyPath' | 'passphrase' | 'privateKeyUri' | 'signer' | 'names'
>;

/** Where the configured key is: `pem` for `privateKey`/`privateKeyPath` (or none set, which the PEM loader reports). */
type KeySourceKind = 'pem' | 'pkcs11' | 'signer';

/**
 * The one key source configured. Several at once are a problem (reported here) and `undefined`; none at all is left
 * to the PEM loader, which says what to set.
 */
export function keySourceKind(sources: KeySources, report: ConfigReport): KeySourceKind | undefined {
  const { names } = sources;
  const given = (['privateKey', 'privateKeyPath', 'privateKeyUri', 'signer'] as const).filter(
    (name) => sources[name] !== undefined,
  );
  const external = given.filter((name) => name === 'privateKeyUri' || name === 'signer');
  if (external.length > 0 && given.length > 1) {
    report.problem(
      names[external[0]],
      `set only one of ${given.map((name) => names[name]).join(', ')}: the key is in one place (a PEM key, a PKCS#11 token or a signer)`,
    );
    return undefined;
  }
  if (sources.passphrase !== undefined && external.length > 0) {
    report.warn(names.passphrase, `is ignored: the key comes from ${names[external[0]]}, not from an encrypted PEM`);
  }
  return external[0] === 'privateKeyUri' ? 'pkcs11' : external[0] === 'signer' ? 'signer' : 'pem';
}

/**
 * The key of a PKCS#11 token or of the application's signer, opened and proven: every start-up check of the URI,
 * then one test signature verified against the certificate's public key (what the platform will do). Problems go
 * to `report` on the pair's `privateKeyUri` or `signer`; the key is closed again and `undefined` returned when there
 * is any.
 * Without a certificate (its absence is reported with the certificate) the URI is still checked, the key not proven.
 */
export async function openExternalKey(
  kind: Exclude<KeySourceKind, 'pem'>,
  sources: KeySources,
  certificate: X509Certificate | undefined,
  report: ConfigReport,
): Promise<AssertionKey | undefined> {
  const option = kind === 'pkcs11' ? sources.names.privateKeyUri : sources.names.signer;
  let key: AssertionKey | undefined;
  if (kind === 'signer') {
    const signer = sources.signer as unknown;
    if (typeof signer !== 'object' || signer === null || typeof (signer as { sign?: unknown }).sign !== 'function') {
      report.problem(option, 'must be an object with a sign(signingInput: Uint8Array): Promise<Uint8Array> method');
      return undefined;
    }
    if (!certificate) return undefined;
    key = new SignerAssertionKey(sources.signer!, certificate.publicKey);
  } else {
    const parsed = parsePkcs11Uri(sources.privateKeyUri);
    if (parsed.problems) {
      for (const problem of parsed.problems) report.problem(option, problem);
      return undefined;
    }
    key = await openPkcs11Key(parsed.uri, certificate?.publicKey, {
      problem: (message) => report.problem(option, message),
      warn: (message) => report.warn(option, message),
    });
    if (!key) return undefined;
  }
  const proven = await testSignature(key, option, report);
  if (!proven || !certificate) {
    await key.close();
    return undefined;
  }
  return key;
}

/** One signature of random bytes, checked like every later one; its failure is a start-up problem. */
async function testSignature(key: AssertionKey, option: string, report: ConfigReport): Promise<boolean> {
  try {
    await key.sign(randomBytes(32));
    return true;
  } catch (error) {
    if (error instanceof AssertionSigningError) {
      report.problem(option, `test signature: ${error.message}`);
      return false;
    }
    throw error;
  }
}
