import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSelfSignedCredentials as issue } from '../../lib/testing/self-signed-credentials.util.js';
import { certificateDer, createSelfSignedCredentials, pooledRsaKeyPair } from '../support/pooled-test-keys.js';

const pemOf = (key: Awaited<ReturnType<typeof pooledRsaKeyPair>>) =>
  key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const derOf = (pem: string) => Buffer.from(new X509Certificate(pem).raw);

/**
 * The suite's emulated integrations get certificates from the key cache's own encoder: they must be the ones
 * lib/testing issues, or the suite would test the library against certificates no user has.
 */
describe("the key cache's certificates", () => {
  it.each([
    { commonName: 'nestjs-platform-auth integration', notBefore: new Date('2026-11-29T08:59:00.999Z'), days: 365 },
    { commonName: 'nestjs-platform-auth test integration', notBefore: new Date('2001-02-03T04:05:06Z'), days: 1 },
    { commonName: 'a', notBefore: new Date('2049-12-31T23:59:59.500Z'), days: 2 },
    { commonName: "Acme (billing) it's me: ?/-.", notBefore: new Date('2060-01-01T00:00:00Z'), days: -3 },
  ])('are byte for byte those of lib/testing: $commonName from $notBefore', async ({ commonName, notBefore, days }) => {
    const key = await pooledRsaKeyPair();
    const theirs = await issue({ privateKeyPem: pemOf(key), commonName, notBefore, days });
    const serial = Buffer.from(new X509Certificate(theirs.certificatePem).serialNumber, 'hex');
    expect(serial[0]).toBe(0x07);
    const notAfter = new Date(notBefore.getTime() + days * 24 * 60 * 60 * 1000);
    expect(certificateDer(key.privateKey, commonName, notBefore, notAfter, serial.subarray(1))).toEqual(
      derOf(theirs.certificatePem),
    );
  });

  it('come with the PEM, key and thumbprint lib/testing returns for them', async () => {
    const ours = await createSelfSignedCredentials({ now: Date.now(), thumbprintAlgorithm: 'sha256' });
    const theirs = await issue({ privateKeyPem: ours.privateKeyPem, thumbprintAlgorithm: 'sha256' });
    expect(ours.privateKeyPem).toBe(theirs.privateKeyPem);
    const certificate = new X509Certificate(ours.certificatePem);
    expect(ours.certificatePem.replace(/[A-Za-z0-9+/=]{64}\n/g, '')).toMatch(
      /^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=]{1,64}\n-----END CERTIFICATE-----$/,
    );
    expect(ours.thumbprint).toBe(certificate.fingerprint256.replace(/:/g, ''));
    expect(certificate.subject).toBe('CN=nestjs-platform-auth integration');
    expect(certificate.checkPrivateKey(createPrivateKey(ours.privateKeyPem))).toBe(true);
    expect(certificate.verify(certificate.publicKey)).toBe(true);
  });

  it.each(['Zürich integration', 'billing, EU', ' padded '])(
    'leave a name outside PrintableString, or one @peculiar/x509 parses, to lib/testing: %s',
    async (commonName) => {
      const { privateKeyPem, certificatePem } = await createSelfSignedCredentials({ commonName });
      const serial = Buffer.from(new X509Certificate(certificatePem).serialNumber, 'hex');
      const theirs = await issue({ privateKeyPem, commonName, notBefore: new Date(0) });
      expect(new X509Certificate(certificatePem).subject).toBe(new X509Certificate(theirs.certificatePem).subject);
      expect(serial[0]).toBe(0x07);
    },
  );
});
