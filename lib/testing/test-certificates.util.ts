import { createPrivateKey, sign } from 'node:crypto';
import { createSelfSignedCredentials } from './self-signed-credentials.util.js';

export interface TestCertificatesOptions {
  /** The key every certificate is issued for. Default: a new throwaway RSA-2048 key. */
  privateKeyPem?: string;
  /** Reference time for the validity window, in ms. Default `Date.now()`. */
  now?: number;
}

export interface TestCertificates {
  /** PKCS#8 PEM of the one key the certificates share; never written anywhere by this function. */
  privateKeyPem: string;
  /** Distinct self-signed certificates (distinct thumbprints), PEM, in the order made. */
  certificatePems: string[];
}

/** Digits patched into the common name of each copy: the same width in every certificate keeps the DER lengths. */
const SERIAL_WIDTH = 12;
const MARKER = '0'.repeat(SERIAL_WIDTH);

/**
 * `count` self-signed certificates for one RSA key, for registering thousands of integrations in an emulator
 * (`registerIntegrations`): a certificate per integration, as the portal requires, made in about a millisecond each
 * by signing a copy of one template whose common name carries the certificate's number.
 */
export async function createTestCertificates(
  count: number,
  options: TestCertificatesOptions = {},
): Promise<TestCertificates> {
  if (!Number.isInteger(count) || count < 1 || count >= 10 ** SERIAL_WIDTH) {
    throw new Error(`createTestCertificates: count must be a whole number from 1, got ${String(count)}`);
  }
  const template = await createSelfSignedCredentials({
    commonName: `nestjs-platform-auth test integration ${MARKER}`,
    privateKeyPem: options.privateKeyPem,
    now: options.now,
  });
  const key = createPrivateKey(template.privateKeyPem);
  const der = Buffer.from(template.certificatePem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const markers = occurrences(der, Buffer.from(MARKER, 'latin1'));
  const tbs = firstElement(der);
  const signatureLength = (key.asymmetricKeyDetails?.modulusLength ?? 2048) / 8;
  const certificatePems: string[] = [];
  for (let index = 1; index <= count; index += 1) {
    const copy = Buffer.from(der);
    const digits = Buffer.from(String(index).padStart(SERIAL_WIDTH, '0'), 'latin1');
    for (const at of markers) digits.copy(copy, at);
    sign('sha256', copy.subarray(tbs.start, tbs.end), key).copy(copy, copy.length - signatureLength);
    certificatePems.push(toPem(copy));
  }
  return { privateKeyPem: template.privateKeyPem, certificatePems };
}

function occurrences(haystack: Buffer, needle: Buffer): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/** Where the first element inside the outer DER SEQUENCE (the TBSCertificate, what the signature covers) lies. */
function firstElement(der: Buffer): { start: number; end: number } {
  const start = 1 + lengthOf(der, 1).bytes;
  const inner = lengthOf(der, start + 1);
  return { start, end: start + 1 + inner.bytes + inner.value };
}

function lengthOf(der: Buffer, at: number): { value: number; bytes: number } {
  const first = der[at];
  if (first < 0x80) return { value: first, bytes: 1 };
  const size = first & 0x7f;
  return { value: der.readUIntBE(at + 1, size), bytes: 1 + size };
}

function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
