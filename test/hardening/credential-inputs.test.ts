import { createPrivateKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import {
  createCredentialVariants,
  pemFragments,
  tempDir,
  TEST_PASSPHRASE,
  type CredentialVariants,
} from '../support/credential-variants.js';
import { expectNoSecrets } from '../support/leak-check.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
let v: CredentialVariants;
let files: ReturnType<typeof tempDir>;

beforeAll(async () => {
  v = await createCredentialVariants(NOW);
  files = tempDir();
});
afterAll(() => files.remove());

function options(overrides: Partial<PlatformAuthOptions> = {}): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    machineId: 'machine-1',
    ...overrides,
    key: { privateKey: v.valid.privateKeyPem, certificate: v.valid.certificatePem, ...overrides.key },
  };
}

async function configError(overrides: Partial<PlatformAuthOptions>): Promise<PlatformAuthConfigError> {
  try {
    await loadPlatformAuthConfig(options(overrides), NOW);
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformAuthConfigError);
    const configError = error as PlatformAuthConfigError;
    expectNoSecrets(configError, [
      ...pemFragments(
        v.valid.privateKeyPem,
        v.valid.certificatePem,
        v.pkcs1Pem,
        v.encryptedPkcs8Pem,
        v.encryptedPkcs1Pem,
        v.rsa1024Pem,
        v.ecPem,
        v.ed25519Pem,
        v.publicKeyPem,
        v.otherCertificatePem,
      ),
      TEST_PASSPHRASE,
      '-----BEGIN',
    ]);
    return configError;
  }
  throw new Error('expected a PlatformAuthConfigError');
}

async function expectProblem(overrides: Partial<PlatformAuthOptions>, setting: RegExp, message: RegExp): Promise<void> {
  const error = await configError(overrides);
  expect(error.problems).toContainEqual(
    expect.objectContaining({ setting: expect.stringMatching(setting), message: expect.stringMatching(message) }),
  );
}

describe('start-up checks: keys that load', () => {
  it('loads a PKCS#8 key and computes the thumbprint from the certificate', async () => {
    const config = await loadPlatformAuthConfig(options(), NOW);
    expect(config.credentials.key.publicKey.asymmetricKeyType).toBe('rsa');
    expect(config.credentials.thumbprint).toBe(v.valid.thumbprint);
    expect(config.warnings).toEqual([]);
  });

  it('loads a PKCS#1 key', async () => {
    const config = await loadPlatformAuthConfig(options({ key: { privateKey: v.pkcs1Pem } }), NOW);
    expect(config.credentials.key.modulusBits).toBe(2048);
  });

  it('loads encrypted PKCS#8 and PKCS#1 keys with the passphrase', async () => {
    for (const privateKey of [v.encryptedPkcs8Pem, v.encryptedPkcs1Pem]) {
      const config = await loadPlatformAuthConfig(options({ key: { privateKey, passphrase: TEST_PASSPHRASE } }), NOW);
      expect(config.credentials.key.modulusBits).toBe(2048);
    }
  });

  it('loads key and certificate from paths', async () => {
    const privateKeyPath = files.write('private-key.pem', v.valid.privateKeyPem);
    const certificatePath = files.write('publickey.cer', v.valid.certificatePem);
    const config = await loadPlatformAuthConfig(
      options({ key: { privateKey: undefined, certificate: undefined, privateKeyPath, certificatePath } }),
      NOW,
    );
    expect(config.credentials.thumbprint).toBe(v.valid.thumbprint);
  });

  it('tolerates literal \\n and CRLF in PEM from environment variables', async () => {
    const literal = v.valid.privateKeyPem.replace(/\n/g, '\\n');
    const crlf = v.valid.certificatePem.replace(/\n/g, '\r\n');
    const config = await loadPlatformAuthConfig(options({ key: { privateKey: literal, certificate: crlf } }), NOW);
    expect(config.credentials.thumbprint).toBe(v.valid.thumbprint);
  });

  it('reads literal \\n and CRLF PEM values from environment variables through readPlatformAuthEnv', async () => {
    const fromEnv = readPlatformAuthEnv({
      PLATFORM_BASE_URL: 'https://platform.example.com',
      PLATFORM_MACHINE_ID: 'machine-env',
      PLATFORM_PRIVATE_KEY: v.encryptedPkcs8Pem.replace(/\n/g, '\\n'),
      PLATFORM_PRIVATE_KEY_PASSPHRASE: TEST_PASSPHRASE,
      PLATFORM_CERTIFICATE: v.valid.certificatePem.replace(/\n/g, '\r\n'),
    });
    const config = await loadPlatformAuthConfig(fromEnv, NOW);
    expect(config.machineId).toBe('machine-env');
    expect(config.credentials.thumbprint).toBe(v.valid.thumbprint);
  });

  it('uses a configured thumbprint when no certificate is given, ignoring case, colons and spaces', async () => {
    const spaced = v.valid.thumbprint.toLowerCase().match(/../g)!.join(':');
    const config = await loadPlatformAuthConfig(
      options({ key: { certificate: undefined }, thumbprint: ` ${spaced} ` }),
      NOW,
    );
    expect(config.credentials.thumbprint).toBe(v.valid.thumbprint);
  });

  it('warns, without failing, on a certificate that expires within 30 days and on a key that is not 2048 bits', async () => {
    const config = await loadPlatformAuthConfig(options({ key: { certificate: v.expiringSoonCertificatePem } }), NOW);
    expect(config.warnings).toContainEqual({
      option: 'key.certificate',
      setting: 'key.certificate (PLATFORM_CERTIFICATE)',
      message: expect.stringMatching(/expires in 10 day/),
    });
    const big = await loadPlatformAuthConfig(
      options({ key: { privateKey: v.rsa3072Pem, certificate: undefined }, thumbprint: v.valid.thumbprint }),
      NOW,
    );
    expect(big.warnings).toContainEqual({
      option: 'key.privateKey',
      setting: 'key.privateKey (PLATFORM_PRIVATE_KEY)',
      message: expect.stringMatching(/3072-bit/),
    });
  });
});

describe('start-up checks: problems, each named, none echoing key material', () => {
  it('rejects a 1024-bit RSA key', async () => {
    await expectProblem(
      { key: { privateKey: v.rsa1024Pem, certificate: undefined }, thumbprint: v.valid.thumbprint },
      /^key\.privateKey/,
      /1024-bit RSA key; at least 2048/,
    );
  });

  it('rejects an EC key', async () => {
    await expectProblem(
      { key: { privateKey: v.ecPem } },
      /^key\.privateKey \(PLATFORM_PRIVATE_KEY\)/,
      /an EC key; the platform requires an RSA key/,
    );
  });

  it('rejects an Ed25519 key', async () => {
    await expectProblem({ key: { privateKey: v.ed25519Pem } }, /^key\.privateKey/, /an Ed25519 key/);
  });

  it('rejects a certificate in the key slot', async () => {
    await expectProblem(
      { key: { privateKey: v.valid.certificatePem } },
      /^key\.privateKey/,
      /holds a certificate, not a private key/,
    );
  });

  it('rejects a public key in the key slot', async () => {
    await expectProblem(
      { key: { privateKey: v.publicKeyPem } },
      /^key\.privateKey/,
      /holds a public key, not a private key/,
    );
  });

  it('rejects a certificate that does not match the key', async () => {
    await expectProblem(
      { key: { certificate: v.otherCertificatePem } },
      /^key\.certificate \(PLATFORM_CERTIFICATE\)/,
      /does not match the private key/,
    );
  });

  it('rejects an expired certificate', async () => {
    await expectProblem({ key: { certificate: v.expiredCertificatePem } }, /^key\.certificate/, /expired on \d{4}-/);
  });

  it('rejects a certificate that is not valid yet', async () => {
    await expectProblem({ key: { certificate: v.notYetValidCertificatePem } }, /^key\.certificate/, /not valid yet/);
  });

  it('rejects an encrypted key without a passphrase', async () => {
    await expectProblem(
      { key: { privateKey: v.encryptedPkcs8Pem } },
      /^key\.privateKey/,
      /encrypted but no passphrase/,
    );
  });

  it('rejects a wrong passphrase, for PKCS#8 and PKCS#1', async () => {
    for (const privateKey of [v.encryptedPkcs8Pem, v.encryptedPkcs1Pem]) {
      await expectProblem(
        { key: { privateKey, passphrase: 'wrong' } },
        /^key\.passphrase \(PLATFORM_PRIVATE_KEY_PASSPHRASE\)/,
        /wrong passphrase/,
      );
    }
  });

  it('rejects an assertion lifetime over 300 seconds', async () => {
    await expectProblem({ assertionLifetimeSeconds: 301 }, /^assertionLifetimeSeconds$/, /at most 300 seconds/);
  });

  it('rejects an unreadable key path, naming the path', async () => {
    await expectProblem(
      { key: { privateKey: undefined, privateKeyPath: '/nonexistent/private-key.pem' } },
      /^key\.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\)/,
      /'\/nonexistent\/private-key.pem': no such file/,
    );
  });

  it('rejects an empty key file and a garbage key', async () => {
    const empty = files.write('empty.pem', '');
    await expectProblem({ key: { privateKey: undefined, privateKeyPath: empty } }, /^key\.privateKeyPath/, /is empty/);
    await expectProblem({ key: { privateKey: 'not a key at all' } }, /^key\.privateKey/, /is not PEM text/);
  });

  it('rejects a DER private key', async () => {
    const der = files.write(
      'private-key.der',
      createPrivateKey(v.valid.privateKeyPem).export({ type: 'pkcs8', format: 'der' }),
    );
    await expectProblem(
      { key: { privateKey: undefined, privateKeyPath: der } },
      /^key\.privateKeyPath/,
      /is not PEM text/,
    );
  });

  it('rejects a directory and a path through a file, naming the path', async () => {
    await expectProblem(
      { key: { privateKey: undefined, privateKeyPath: files.dir } },
      /^key\.privateKeyPath/,
      /it is a directory/,
    );
    const file = files.write('plain.txt', 'x');
    await expectProblem(
      { key: { certificate: undefined, certificatePath: `${file}/publickey.cer` } },
      /^key\.certificatePath/,
      /ENOTDIR/,
    );
  });

  it('never echoes PEM text pasted into a path or URL setting', async () => {
    await expectProblem(
      { key: { privateKey: undefined, privateKeyPath: v.valid.privateKeyPem } },
      /^key\.privateKeyPath/,
      /is not a file path \(it looks like PEM text\); put PEM text in key\.privateKey instead/,
    );
    await expectProblem(
      { key: { certificate: undefined, certificatePath: v.valid.certificatePem.replace(/\n/g, '\\n') } },
      /^key\.certificatePath/,
      /is not a file path/,
    );
    await expectProblem({ baseUrl: v.valid.privateKeyPem }, /^baseUrl/, /^is not an absolute URL$/);
    await expectProblem({ allowedOrigins: [v.valid.privateKeyPem] }, /^allowedOrigins/, /^is not an absolute URL$/);
  });

  it('rejects a key given as something other than a string', async () => {
    const buffer = Buffer.from(v.valid.privateKeyPem) as unknown as string;
    await expectProblem({ key: { privateKey: buffer } }, /^key\.privateKey/, /must be a string of PEM text/);
  });

  it('rejects setting both the inline value and the path', async () => {
    const path = files.write('both.pem', v.valid.privateKeyPem);
    await expectProblem(
      { key: { privateKeyPath: path } },
      /^key\.privateKey \(PLATFORM_PRIVATE_KEY\)/,
      /set only one of key.privateKey and key.privateKeyPath/,
    );
  });

  it('rejects a certificate slot holding a private key without echoing it', async () => {
    await expectProblem(
      { key: { certificate: v.valid.privateKeyPem } },
      /^key\.certificate/,
      /holds a private key, not a certificate/,
    );
  });

  it('rejects a DER certificate and a bundle of several certificates', async () => {
    const der = files.write('cert.der', v.derCertificate);
    await expectProblem(
      { key: { certificate: undefined, certificatePath: der } },
      /^key\.certificatePath/,
      /is not PEM text/,
    );
    await expectProblem(
      { key: { certificate: `${v.valid.certificatePem}\n${v.otherCertificatePem}` } },
      /^key\.certificate/,
      /2 PEM blocks; provide exactly one certificate/,
    );
  });

  it('rejects a configured thumbprint that differs from the certificate', async () => {
    await expectProblem(
      { thumbprint: '00'.repeat(20) },
      /^thumbprint \(PLATFORM_CERT_THUMBPRINT\)/,
      new RegExp(`differs from the certificate's sha1 thumbprint ${v.valid.thumbprint}`),
    );
  });

  it('rejects http: off loopback and accepts it on loopback', async () => {
    await expectProblem(
      { baseUrl: 'http://platform.example.com' },
      /^baseUrl \(PLATFORM_BASE_URL\)/,
      /http: off loopback/,
    );
    expect((await loadPlatformAuthConfig(options({ baseUrl: 'http://127.0.0.1:8080' }), NOW)).baseUrl).toBe(
      'http://127.0.0.1:8080',
    );
    expect((await loadPlatformAuthConfig(options({ baseUrl: 'http://localhost:8080' }), NOW)).audience).toBe(
      'localhost:8080',
    );
  });

  it('requires baseUrl, machineId, a key and a certificate or thumbprint, and reports all of them at once', async () => {
    const error = await configError({
      baseUrl: '',
      machineId: '',
      key: { privateKey: undefined, certificate: undefined },
    });
    expect(error.problems.map((p) => p.setting)).toEqual([
      'baseUrl (PLATFORM_BASE_URL)',
      'machineId (PLATFORM_MACHINE_ID)',
      'key.privateKey (PLATFORM_PRIVATE_KEY)',
      'key.certificate (PLATFORM_CERTIFICATE)',
    ]);
    expect(error.message).toMatch(/^Invalid platform auth configuration \(4 problems\):/);
  });
});

describe('resolved defaults', () => {
  it('derives audience, token URL and allowed origins from baseUrl', async () => {
    const config = await loadPlatformAuthConfig(
      options({ baseUrl: 'https://platform.example.com/', allowedOrigins: ['https://files.example.com:8443/x'] }),
      NOW,
    );
    expect(config.audience).toBe('platform.example.com');
    expect(config.tokenUrl).toBe('https://platform.example.com/loginservice/connect/token');
    expect([...config.allowedOrigins]).toEqual(['https://platform.example.com', 'https://files.example.com:8443']);
    expect(config.assertionLifetimeSeconds).toBe(300);
    expect(config.refreshBeforeExpirySeconds).toBe(60);
  });
});
