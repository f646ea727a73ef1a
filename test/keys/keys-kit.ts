import { X509Certificate } from 'node:crypto';
import { expect } from 'vitest';
import { PlatformAuthConfigError, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { loadPlatformAuthConfig, type ResolvedPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { issueSelfSignedCertificate } from '../../lib/credentials/certificate.issuer.js';
import { generateKeyInToken } from '../../lib/credentials/pkcs11/pkcs11.keygen.js';
import { parsePkcs11Uri } from '../../lib/credentials/pkcs11/pkcs11-uri.parser.js';

/** Generates a key inside the token `uri` names, as keygen does, and returns its self-signed certificate (PEM). */
export async function keyInToken(uri: string, commonName = 'key custody test'): Promise<string> {
  const parsed = parsePkcs11Uri(uri);
  if (parsed.problems) throw new Error(parsed.problems.join('; '));
  const { key } = await generateKeyInToken(parsed.uri);
  try {
    return await issueSelfSignedCertificate(key, { commonName, days: 365, nowMs: Date.now() });
  } finally {
    await key.close();
  }
}

/** The start-up resolution's error, which every refusal must be. */
export async function startupError(options: PlatformAuthOptions, nowMs = Date.now()): Promise<PlatformAuthConfigError> {
  let config: ResolvedPlatformAuthConfig | undefined;
  let caught: unknown;
  try {
    config = await loadPlatformAuthConfig(options, nowMs);
  } catch (error) {
    caught = error;
  } finally {
    await config?.credentials.key.close();
  }
  expect(caught).toBeInstanceOf(PlatformAuthConfigError);
  return caught as PlatformAuthConfigError;
}

/** The problems of a refusal as `setting: message` lines. */
export function problemLines(error: PlatformAuthConfigError): string[] {
  return error.problems.map((problem) => `${problem.setting}: ${problem.message}`);
}

export function publicKeyOf(certificatePem: string) {
  return new X509Certificate(certificatePem).publicKey;
}
