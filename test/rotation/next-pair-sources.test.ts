import { createPrivateKey, sign } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { keyInToken, problemLines, startupError } from '../keys/keys-kit.js';
import { SoftHsm } from '../keys/softhsm.js';

const TOKEN = 'rotation';
let hsm: SoftHsm;
let hsmCertificatePem: string;
let platform: PlatformEmulator;
let clock: FakeClock;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  hsmCertificatePem = await keyInToken(hsm.uri(TOKEN, 'next-key'), 'next pair in a token');
  clock = new FakeClock(Date.now(), { autoAdvance: true });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
});

afterAll(async () => {
  await platform?.close();
  hsm?.close();
});

/** A module whose next pair is `next`, on a fresh integration; the portal then holds `nextCertificatePem`. */
async function switchTo(next: Partial<PlatformAuthOptions>, nextCertificatePem: string): Promise<string> {
  const integration = await platform.createIntegration();
  const moduleRef = await Test.createTestingModule({
    imports: [PlatformAuthModule.forRoot({ ...integration.moduleOptions, clock, ...next })],
  }).compile();
  await moduleRef.init();
  try {
    const tokens = moduleRef.get(TokenProvider);
    await tokens.getAccessToken();
    platform.replaceCertificate(integration.machineId, nextCertificatePem);
    clock.advance(601_000);
    await tokens.getAccessToken();
    return tokens.status().credentials.thumbprint;
  } finally {
    await moduleRef.close();
  }
}

describe('the next pair takes every key source of the current pair', () => {
  it('a PEM key file and certificate file', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const next = await createTestCredentials();
    const dir = mkdtempSync(join(tmpdir(), 'platform-auth-next-'));
    try {
      writeFileSync(join(dir, 'next.key'), next.privateKeyPem);
      writeFileSync(join(dir, 'next.crt'), next.certificatePem);
      const thumbprint = await switchTo(
        { next: { privateKeyPath: join(dir, 'next.key'), certificatePath: join(dir, 'next.crt') } },
        next.certificatePem,
      );
      expect(thumbprint).toBe(next.thumbprint);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a key in a PKCS#11 token (SoftHSM), by pkcs11: URI', async () => {
    const { X509Certificate } = await import('node:crypto');
    const expected = new X509Certificate(hsmCertificatePem).fingerprint.replaceAll(':', '');
    const thumbprint = await switchTo(
      { next: { privateKeyUri: hsm.uri(TOKEN, 'next-key', { pin: '48151623' }), certificate: hsmCertificatePem } },
      hsmCertificatePem,
    );
    expect(thumbprint).toBe(expected);
  });

  it("the application's signer", async () => {
    const next = await createTestCredentials();
    const key = createPrivateKey(next.privateKeyPem);
    const nextSigner = { sign: async (input: Uint8Array) => sign('sha256', input, key) };
    const thumbprint = await switchTo(
      { next: { signer: nextSigner, certificate: next.certificatePem } },
      next.certificatePem,
    );
    expect(thumbprint).toBe(next.thumbprint);
  });

  it('a signer that signs with another key is refused at start-up, named as the next signer', async () => {
    const [current, next, other] = await Promise.all([
      createTestCredentials(),
      createTestCredentials(),
      createTestCredentials(),
    ]);
    const key = createPrivateKey(other.privateKeyPem);
    const lines = problemLines(
      await startupError({
        baseUrl: platform.url,
        machineId: 'machine',
        key: { privateKey: current.privateKeyPem, certificate: current.certificatePem },
        next: {
          signer: { sign: async (input: Uint8Array) => sign('sha256', input, key) },
          certificate: next.certificatePem,
        },
      }),
    );
    expect(lines.join('\n')).toMatch(/^next\.signer: test signature: /m);
  });
});
