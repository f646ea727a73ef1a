import { createPrivateKey, createPublicKey, generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { pooledRsaKeyPair } from './pooled-test-keys.js';

export const TEST_PASSPHRASE = 'correct horse battery staple (test only)';
const DAY_MS = 24 * 60 * 60 * 1000;

/** Every key and certificate shape the start-up checks distinguish, generated fresh for one test file. */
export interface CredentialVariants {
  valid: TestCredentials;
  pkcs1Pem: string;
  encryptedPkcs8Pem: string;
  encryptedPkcs1Pem: string;
  rsa1024Pem: string;
  rsa3072Pem: string;
  ecPem: string;
  ed25519Pem: string;
  publicKeyPem: string;
  /** A valid certificate made from another key. */
  otherCertificatePem: string;
  expiredCertificatePem: string;
  notYetValidCertificatePem: string;
  expiringSoonCertificatePem: string;
  derCertificate: Buffer;
}

export async function createCredentialVariants(now = Date.now()): Promise<CredentialVariants> {
  const valid = await createTestCredentials({ now });
  const privateKey = createPrivateKey(valid.privateKeyPem);
  const other = await createTestCredentials({ now });
  const forKey = (notBefore: number, notAfter: number) =>
    createTestCredentials({
      privateKeyPem: valid.privateKeyPem,
      notBefore: new Date(notBefore),
      notAfter: new Date(notAfter),
    });
  const [expired, notYetValid, expiringSoon] = await Promise.all([
    forKey(now - 400 * DAY_MS, now - DAY_MS),
    forKey(now + DAY_MS, now + 400 * DAY_MS),
    forKey(now - DAY_MS, now + 10 * DAY_MS),
  ]);
  return {
    valid,
    pkcs1Pem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    encryptedPkcs8Pem: privateKey
      .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: TEST_PASSPHRASE })
      .toString(),
    encryptedPkcs1Pem: privateKey
      .export({ type: 'pkcs1', format: 'pem', cipher: 'aes-256-cbc', passphrase: TEST_PASSPHRASE })
      .toString(),
    rsa1024Pem: pkcs8(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey),
    rsa3072Pem: pkcs8((await pooledRsaKeyPair(3072)).privateKey),
    ecPem: pkcs8(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey),
    ed25519Pem: pkcs8(generateKeyPairSync('ed25519').privateKey),
    publicKeyPem: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString(),
    otherCertificatePem: other.certificatePem,
    expiredCertificatePem: expired.certificatePem,
    notYetValidCertificatePem: notYetValid.certificatePem,
    expiringSoonCertificatePem: expiringSoon.certificatePem,
    derCertificate: Buffer.from(new X509Certificate(valid.certificatePem).raw),
  };
}

function pkcs8(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** A temporary directory for key files, removed by the returned function. */
export function tempDir(): {
  dir: string;
  write(name: string, content: string | Buffer, mode?: number): string;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'platform-auth-test-'));
  return {
    dir,
    write(name, content, mode = 0o600) {
      const path = join(dir, name);
      writeFileSync(path, content, { mode });
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Fragments of PEM bodies: none may appear in any message. */
export function pemFragments(...pems: string[]): string[] {
  return pems.flatMap((pem) =>
    pem
      .split('\n')
      .filter((line) => line.length >= 40 && !line.startsWith('-----'))
      .slice(0, 3),
  );
}
