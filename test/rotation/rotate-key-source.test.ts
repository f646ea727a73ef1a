import { createPrivateKey, sign, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialRotationError, type PlatformAuthSigner } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { createCredentialVariants, TEST_PASSPHRASE, type CredentialVariants } from '../support/credential-variants.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { keyInToken } from '../keys/keys-kit.js';
import { SoftHsm } from '../keys/softhsm.js';

// rotateCredentials() takes the new pair as the `key` option takes it: every key source, the same checks, and
// problems named by the input's own paths (`key.passphrase`), which no environment variable fills.

const TOKEN = 'rotate';
const start = usePlatformFixtures();
let hsm: SoftHsm;
let hsmCertificatePem: string;
let v: CredentialVariants;
let dir: string;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  hsmCertificatePem = await keyInToken(hsm.uri(TOKEN, 'rotated-key'), 'rotated into a token');
  v = await createCredentialVariants();
  dir = mkdtempSync(join(tmpdir(), 'platform-auth-rotate-'));
});

afterAll(() => {
  hsm?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The issuer of the last assertion the platform received. */
function lastIssuer(f: PlatformFixture): unknown {
  return f.platform.journal.at(-1)?.claims?.iss;
}

/** A module on its first pair, with the portal already holding `certificatePem` for the rotation. */
async function registered(certificatePem: string): Promise<PlatformFixture> {
  const f = await start();
  await f.tokens.getAccessToken();
  f.platform.replaceCertificate(f.integration.machineId, certificatePem);
  return f;
}

function thumbprintOf(certificatePem: string): string {
  return new X509Certificate(certificatePem).fingerprint.replaceAll(':', '');
}

describe('rotateCredentials({ key }) with each key source', () => {
  it('PEM files: key.privateKeyPath and key.certificatePath', async () => {
    const next = await createTestCredentials();
    const privateKeyPath = join(dir, 'next.key');
    const certificatePath = join(dir, 'next.cer');
    writeFileSync(privateKeyPath, next.privateKeyPem);
    writeFileSync(certificatePath, next.certificatePem);
    const f = await registered(next.certificatePem);
    await f.tokens.rotateCredentials({ key: { privateKeyPath, certificatePath } });
    expect(f.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
    expect(lastIssuer(f)).toBe(next.thumbprint);
  });

  it('an encrypted PEM key with key.passphrase', async () => {
    const f = await registered(v.valid.certificatePem);
    await f.tokens.rotateCredentials({
      key: { privateKey: v.encryptedPkcs8Pem, passphrase: TEST_PASSPHRASE, certificate: v.valid.certificatePem },
    });
    expect(f.tokens.status().credentials.thumbprint).toBe(v.valid.thumbprint);
    expect(lastIssuer(f)).toBe(v.valid.thumbprint);
  });

  it("the application's signer, checked against the certificate", async () => {
    const next: TestCredentials = await createTestCredentials();
    const key = createPrivateKey(next.privateKeyPem);
    const signer: PlatformAuthSigner = {
      name: 'RotatedKms',
      sign: (input) => Promise.resolve(sign('sha256', input, key)),
    };
    const f = await registered(next.certificatePem);
    await f.tokens.rotateCredentials({ key: { signer, certificate: next.certificatePem } });
    expect(f.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
    expect(lastIssuer(f)).toBe(next.thumbprint);
  });

  it('a key in a PKCS#11 token, by key.privateKeyUri', async () => {
    const f = await registered(hsmCertificatePem);
    await f.tokens.rotateCredentials({
      key: { privateKeyUri: hsm.uri(TOKEN, 'rotated-key'), certificate: hsmCertificatePem },
    });
    expect(f.tokens.status().credentials.thumbprint).toBe(thumbprintOf(hsmCertificatePem));
    expect(lastIssuer(f)).toBe(thumbprintOf(hsmCertificatePem));
  });
});

describe('rotateCredentials() refuses before any exchange, naming the input’s paths', () => {
  async function refusal(f: PlatformFixture, input: unknown): Promise<CredentialRotationError> {
    const exchanges = f.platform.counters.exchanges.total;
    const error = await f.tokens.rotateCredentials(input as Parameters<typeof f.tokens.rotateCredentials>[0]).then(
      () => expect.unreachable('the rotation was accepted'),
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(CredentialRotationError);
    expect(error).toMatchObject({ stage: 'validation' });
    expect(f.platform.counters.exchanges.total).toBe(exchanges);
    expect(f.tokens.status().credentials.thumbprint).toBe(f.integration.thumbprint);
    expectNoSecrets(error, [v.encryptedPkcs8Pem, v.valid.privateKeyPem, TEST_PASSPHRASE, '-----BEGIN']);
    return error as CredentialRotationError;
  }

  it('an encrypted key without key.passphrase, and with a wrong one', async () => {
    const f = await start();
    const without = await refusal(f, { key: { privateKey: v.encryptedPkcs8Pem, certificate: v.valid.certificatePem } });
    expect(without.problems).toEqual([
      {
        option: 'key.privateKey',
        setting: 'key.privateKey',
        message: 'is encrypted but no passphrase is set: set key.passphrase',
      },
    ]);
    const wrong = await refusal(f, {
      key: { privateKey: v.encryptedPkcs8Pem, passphrase: 'not it', certificate: v.valid.certificatePem },
    });
    expect(wrong.problems).toEqual([
      {
        option: 'key.passphrase',
        setting: 'key.passphrase',
        message: 'does not decrypt the key in key.privateKey: wrong passphrase',
      },
    ]);
    expect(wrong.message).toMatch(/nothing changed: key\.passphrase: does not decrypt the key in key\.privateKey/);
  });

  it('the flat names of an earlier shape, each naming where it moved', async () => {
    const f = await start();
    const error = await refusal(f, {
      privateKey: v.valid.privateKeyPem,
      privateKeyPassphrase: TEST_PASSPHRASE,
      certificate: v.valid.certificatePem,
    });
    expect(error.problems).toEqual(
      expect.arrayContaining([
        { option: 'privateKey', setting: 'privateKey', message: 'moved to key.privateKey' },
        { option: 'privateKeyPassphrase', setting: 'privateKeyPassphrase', message: 'moved to key.passphrase' },
        { option: 'certificate', setting: 'certificate', message: 'moved to key.certificate' },
      ]),
    );
  });
});
