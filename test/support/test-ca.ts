import { KeyObject, webcrypto } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** `@peculiar/x509` is typed against the DOM's `Crypto`; node's webcrypto is that object. */
const provider = webcrypto as never;

export interface IssuedFiles {
  readonly certPath: string;
  readonly keyPath: string;
}

export interface TestCertificateAuthority {
  /** The CA certificate's PEM file: what a client trusts. */
  readonly caPath: string;
  /** A server certificate for 127.0.0.1 and localhost. */
  readonly server: IssuedFiles;
  /** A client certificate, for mutual TLS. */
  readonly client: IssuedFiles;
}

function serial(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^./, '7');
}

function keyPem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * A throwaway certificate authority, made in memory with node:crypto and `@peculiar/x509` (no openssl): its
 * certificate, a server certificate for the loopback address and a client certificate, written as PEM files into
 * `dir`. ECDSA P-256, valid for a day.
 */
export async function createTestCertificateAuthority(dir: string): Promise<TestCertificateAuthority> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 24 * 60 * 60 * 1000);
  const generate = () => webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const caKeys = await generate();
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serial(),
      name: 'CN=platform-auth test CA',
      notBefore,
      notAfter,
      keys: caKeys as never,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    },
    provider,
  );

  const issue = async (name: string, usage: string, san?: x509.SubjectAlternativeNameExtension) => {
    const keys = await generate();
    const certificate = await x509.X509CertificateGenerator.create(
      {
        serialNumber: serial(),
        subject: `CN=${name}`,
        issuer: ca.subject,
        notBefore,
        notAfter,
        publicKey: keys.publicKey as never,
        signingKey: caKeys.privateKey as never,
        signingAlgorithm: ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([usage]),
          ...(san ? [san] : []),
        ],
      },
      provider,
    );
    const files = { certPath: join(dir, `${name}.crt`), keyPath: join(dir, `${name}.key`) };
    writeFileSync(files.certPath, certificate.toString('pem'));
    writeFileSync(files.keyPath, keyPem(keys.privateKey), { mode: 0o600 });
    return files;
  };

  const caPath = join(dir, 'ca.crt');
  writeFileSync(caPath, ca.toString('pem'));
  const server = await issue(
    'redis-server',
    x509.ExtendedKeyUsage.serverAuth,
    new x509.SubjectAlternativeNameExtension([
      { type: 'ip', value: '127.0.0.1' },
      { type: 'dns', value: 'localhost' },
    ]),
  );
  const client = await issue('platform-auth-client', x509.ExtendedKeyUsage.clientAuth);
  return { caPath, server, client };
}
