import 'reflect-metadata';
import { createPrivateKey, createPublicKey, KeyObject, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { certificateThumbprint } from '../credentials/thumbprint.util.js';
import type { ThumbprintAlgorithm } from './emulator/emulator.types.js';

export interface SelfSignedCredentialsOptions {
  /** Subject and issuer common name. Default `nestjs-platform-auth integration`. */
  commonName?: string;
  /** Start of validity. Default: one minute ago (by the system clock, or `now` when given). */
  notBefore?: Date;
  /** End of validity. Default: `notBefore` plus `days`. */
  notAfter?: Date;
  /** Validity in days when `notAfter` is not given. Default 365 (docs/platform-contract.md#keys-and-certificates). */
  days?: number;
  /** RSA modulus size. Default 2048. */
  modulusLength?: number;
  /** Issue the certificate for this existing PKCS#8/PKCS#1 private key instead of generating one. */
  privateKeyPem?: string;
  /** Thumbprint algorithm of the returned `thumbprint`. Default `sha1`. */
  thumbprintAlgorithm?: ThumbprintAlgorithm;
  /** Reference time for the default validity window, in ms. Default `Date.now()`. */
  now?: number;
}

export interface SelfSignedCredentials {
  /** PKCS#8 PEM, generated in memory; this function never writes it anywhere. */
  privateKeyPem: string;
  /** Self-signed X.509 certificate, PEM. */
  certificatePem: string;
  /** Certificate thumbprint, uppercase hex, as the library and the emulator compute it. */
  thumbprint: string;
}

const SIGNING = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
const subtle = webcrypto.subtle;
/** `@peculiar/x509` is typed against the DOM's `Crypto`, absent from a Node-only lib; node's webcrypto is that object. */
const cryptoProvider = webcrypto as never;

/**
 * An RSA key and a self-signed certificate for it, made in memory in the shapes of
 * docs/platform-contract.md#keys-and-certificates (RSA-2048, 365 days). The command line's `keygen` writes them to files; tests use them through `createTestCredentials`.
 */
export async function createSelfSignedCredentials(
  options: SelfSignedCredentialsOptions = {},
): Promise<SelfSignedCredentials> {
  const privateKey = options.privateKeyPem
    ? createPrivateKey(options.privateKeyPem)
    : await generateRsaKey(options.modulusLength ?? 2048);
  const publicKey = createPublicKey(privateKey);
  const keys: webcrypto.CryptoKeyPair = {
    privateKey: await subtle.importKey('pkcs8', privateKey.export({ type: 'pkcs8', format: 'der' }), SIGNING, false, [
      'sign',
    ]),
    publicKey: await subtle.importKey('spki', publicKey.export({ type: 'spki', format: 'der' }), SIGNING, true, [
      'verify',
    ]),
  };

  const notBefore = options.notBefore ?? new Date((options.now ?? Date.now()) - 60_000);
  const notAfter = options.notAfter ?? new Date(notBefore.getTime() + (options.days ?? 365) * 24 * 60 * 60 * 1000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: webcrypto
        .getRandomValues(new Uint8Array(16))
        .reduce((hex, b) => hex + b.toString(16).padStart(2, '0'), '7'),
      name: `CN=${options.commonName ?? 'nestjs-platform-auth integration'}`,
      notBefore,
      notAfter,
      keys: keys as never,
      signingAlgorithm: SIGNING,
      extensions: [new x509.BasicConstraintsExtension(false, undefined, true)],
    },
    cryptoProvider,
  );

  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificatePem: certificate.toString('pem'),
    thumbprint: certificateThumbprint(new Uint8Array(certificate.rawData), options.thumbprintAlgorithm ?? 'sha1'),
  };
}

async function generateRsaKey(modulusLength: number): Promise<KeyObject> {
  const pair = await subtle.generateKey(
    { ...SIGNING, modulusLength, publicExponent: new Uint8Array([1, 0, 1]) },
    true,
    ['sign', 'verify'],
  );
  return KeyObject.from(pair.privateKey);
}
