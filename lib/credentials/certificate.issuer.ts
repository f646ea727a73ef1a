import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { AssertionKey } from './assertion-key.interface.js';

interface IssueOptions {
  readonly commonName: string;
  readonly days: number;
  /** Start of validity: one minute before this time, in ms. */
  readonly nowMs: number;
}

const SIGNING = { name: 'RSASSA-PKCS1-v1_5', hash: { name: 'SHA-256' } } as const;

/**
 * A self-signed X.509 certificate (PEM) for `key`, signed by the key itself wherever it is: @peculiar/x509 builds the
 * certificate and asks its crypto provider to sign, and the provider given here is the key's `sign` (a PKCS#11 token,
 * say), so the private key is never needed in this process. Same shape as keygen's in-memory certificates.
 */
export async function issueSelfSignedCertificate(key: AssertionKey, options: IssueOptions): Promise<string> {
  const notBefore = new Date(options.nowMs - 60_000);
  const notAfter = new Date(notBefore.getTime() + options.days * 24 * 60 * 60 * 1000);
  const name = `CN=${options.commonName}`;
  const provider = {
    getRandomValues: <T extends ArrayBufferView | null>(array: T): T => webcrypto.getRandomValues(array as never),
    subtle: {
      sign: async (_algorithm: unknown, _key: unknown, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer> => {
        const bytes = ArrayBuffer.isView(data)
          ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
          : new Uint8Array(data);
        const signature = await key.sign(bytes);
        return Uint8Array.from(signature).buffer;
      },
    },
  };
  const certificate = await x509.X509CertificateGenerator.create(
    {
      serialNumber: webcrypto
        .getRandomValues(new Uint8Array(16))
        .reduce((hex, b) => hex + b.toString(16).padStart(2, '0'), '7'),
      subject: name,
      issuer: name,
      notBefore,
      notAfter,
      publicKey: new Uint8Array(key.publicKey.export({ type: 'spki', format: 'der' })),
      // Only its algorithm is read: the signature comes from the provider above.
      signingKey: { algorithm: SIGNING, type: 'private', extractable: false, usages: ['sign'] } as never,
      signingAlgorithm: SIGNING,
      extensions: [new x509.BasicConstraintsExtension(false, undefined, true)],
    },
    provider,
  );
  return certificate.toString('pem');
}
