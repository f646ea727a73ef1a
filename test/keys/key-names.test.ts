import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getTokenProviderToken,
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformTenantConfigError,
  type PlatformAuthOptions,
  type TokenProvider,
} from 'nestjs-platform-auth';
import { createTestCredentials, FakeClock, PlatformEmulator, type TestCredentials } from 'nestjs-platform-auth/testing';
import type { PlatformUserAuthOptions } from 'nestjs-platform-auth/user';
import type { ConfigProblem } from '../../lib/platform-auth.errors.js';
import { loadIntegration } from '../../lib/platform-auth.builder.js';
import { resolveUserAuthOptions } from '../../lib/user/user-options.resolver.js';
import { createCredentialVariants, TEST_PASSPHRASE, type CredentialVariants } from '../support/credential-variants.js';
import { eventually } from '../support/eventually.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { RecordingLogger } from '../support/recording-logger.js';

// Every message about a key pair names the setting to change as the configuration holds it: the option path of the
// pair (key.*, next.*), with the variable of the integration it belongs to, or the option alone for a tenant's.

const NOW = Date.now();
let v: CredentialVariants;
let next: TestCredentials;
let dir: string;

beforeAll(async () => {
  [v, next] = await Promise.all([createCredentialVariants(NOW), createTestCredentials({ now: NOW })]);
  dir = mkdtempSync(join(tmpdir(), 'platform-auth-key-names-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function options(overrides: Partial<PlatformAuthOptions> = {}): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    machineId: 'machine-1',
    key: { privateKey: v.valid.privateKeyPem, certificate: v.valid.certificatePem },
    ...overrides,
  };
}

/** The problems of `options` as an application's integration (`integration`) or as tenant `acme`'s settings. */
async function problems(
  input: PlatformAuthOptions,
  owner: { integration: string } | { tenantId: string } = { integration: 'default' },
): Promise<readonly ConfigProblem[]> {
  const ownerWithEnv = 'integration' in owner ? { ...owner, env: {} } : owner;
  const error = await loadIntegration({ options: input, owner: ownerWithEnv, nowMs: NOW }).then(
    async (config) => config.credentials.key.close(),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf('tenantId' in owner ? PlatformTenantConfigError : PlatformAuthConfigError);
  expectNoSecrets(error, [v.encryptedPkcs8Pem, v.valid.privateKeyPem, TEST_PASSPHRASE, '-----BEGIN']);
  return (error as PlatformAuthConfigError | PlatformTenantConfigError).problems;
}

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('an encrypted key without a passphrase names the passphrase to set', () => {
  it('for the default integration: key.passphrase and its variable', async () => {
    expect(await problems(options({ key: { ...options().key, privateKey: v.encryptedPkcs8Pem } }))).toEqual([
      {
        option: 'key.privateKey',
        setting: 'key.privateKey (PLATFORM_PRIVATE_KEY)',
        message: 'is encrypted but no passphrase is set: set key.passphrase (PLATFORM_PRIVATE_KEY_PASSPHRASE)',
      },
    ]);
  });

  it("for a named integration: the integration's own variables", async () => {
    const key = { ...options().key, privateKey: v.encryptedPkcs8Pem };
    expect(await problems(options({ key }), { integration: 'billing' })).toEqual([
      {
        option: 'key.privateKey',
        setting: 'key.privateKey (PLATFORM_BILLING_PRIVATE_KEY)',
        message: 'is encrypted but no passphrase is set: set key.passphrase (PLATFORM_BILLING_PRIVATE_KEY_PASSPHRASE)',
      },
    ]);
  });

  it('for the next pair: next.passphrase, which no variable fills', async () => {
    const nextKey = { privateKey: v.encryptedPkcs8Pem, certificate: next.certificatePem };
    expect(await problems(options({ next: nextKey }))).toContainEqual({
      option: 'next.privateKey',
      setting: 'next.privateKey (PLATFORM_NEXT_PRIVATE_KEY)',
      message: 'is encrypted but no passphrase is set: set next.passphrase',
    });
  });

  it("for a tenant: the tenant's option paths, and no variable", async () => {
    const key = { ...options().key, privateKey: v.encryptedPkcs8Pem };
    expect(await problems(options({ key }), { tenantId: 'acme' })).toEqual([
      {
        option: 'key.privateKey',
        setting: 'key.privateKey',
        message: 'is encrypted but no passphrase is set: set key.passphrase',
      },
    ]);
  });

  it("for user sign-in's private_key_jwt: its PLATFORM_USER_ variable", async () => {
    const user: PlatformUserAuthOptions = {
      baseUrl: 'https://platform.example.com',
      clientId: 'web-app',
      redirectUri: 'https://app.example.com/callback',
      stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha',
      clientAuthentication: 'private_key_jwt',
      key: { privateKey: v.encryptedPkcs8Pem },
    };
    const error = await resolveUserAuthOptions(user, NOW, {}).then(
      (config) => config.clientKey?.close(),
      (reason: unknown) => reason,
    );
    expect((error as PlatformAuthConfigError).problems).toContainEqual({
      option: 'key.privateKey',
      setting: 'key.privateKey (PLATFORM_USER_PRIVATE_KEY)',
      message: 'is encrypted but no passphrase is set: set key.passphrase (PLATFORM_USER_PRIVATE_KEY_PASSPHRASE)',
    });
  });
});

describe('a wrong passphrase is named where its value came from', () => {
  it("the next pair's default, key.passphrase, when next.passphrase is not set", async () => {
    const input = options({
      key: { ...options().key, passphrase: 'the current pair needs none' },
      next: { privateKey: v.encryptedPkcs8Pem, certificate: next.certificatePem },
    });
    expect(await problems(input)).toContainEqual({
      option: 'key.passphrase',
      setting: 'key.passphrase (PLATFORM_PRIVATE_KEY_PASSPHRASE)',
      message: 'does not decrypt the key in next.privateKey: wrong passphrase',
    });
  });
});

describe('an unreadable next certificate names next.certificatePath', () => {
  it('with the variable of the integration, at start-up', async () => {
    const missing = join(dir, 'no-such-next.cer');
    const input = options({ next: { privateKey: next.privateKeyPem, certificatePath: missing } });
    expect(await problems(input, { integration: 'billing' })).toEqual([
      {
        option: 'next.certificatePath',
        setting: 'next.certificatePath (PLATFORM_BILLING_NEXT_CERTIFICATE_PATH)',
        message: expect.stringMatching(/^cannot read certificate file '.*no-such-next\.cer': /) as unknown,
      },
    ]);
  });

  it('as a tenant’s option path, at start-up', async () => {
    const missing = join(dir, 'no-such-next.cer');
    const input = options({ next: { privateKey: next.privateKeyPem, certificatePath: missing } });
    expect((await problems(input, { tenantId: 'acme' })).map((p) => p.setting)).toEqual(['next.certificatePath']);
  });
});

describe('a mismatched pair names both halves by their options', () => {
  it('files of the next pair: next.certificatePath and next.privateKeyPath with their paths', async () => {
    const keyPath = write('mismatch-next.key', next.privateKeyPem);
    const certificatePath = write('mismatch-next.cer', v.otherCertificatePem);
    const [problem] = await problems(options({ next: { privateKeyPath: keyPath, certificatePath } }));
    expect(problem).toEqual({
      option: 'next.certificatePath',
      setting: 'next.certificatePath (PLATFORM_NEXT_CERTIFICATE_PATH)',
      message: `the certificate (next.certificatePath ${certificatePath}) does not match the private key (next.privateKeyPath ${keyPath}): it was made from another key; configure the pair keygen wrote together, or the certificate registered for this key`,
    });
  });

  it("PEM text of a tenant's current pair: key.certificate and key.privateKey", async () => {
    const input = options({ key: { privateKey: v.valid.privateKeyPem, certificate: v.otherCertificatePem } });
    const [problem] = await problems(input, { tenantId: 'acme' });
    expect(problem).toMatchObject({
      setting: 'key.certificate',
      message: expect.stringMatching(
        /^the certificate \(key\.certificate PEM text\) does not match the private key \(key\.privateKey PEM text\)/,
      ) as unknown,
    });
  });
});

describe('a file reload names the settings as start-up does', () => {
  const INTERVAL = 30_000;

  it("a named integration's next certificate replaced by a directory: its own variable", async () => {
    const clock = new FakeClock(Date.now(), { autoAdvance: false });
    const platform = await PlatformEmulator.start({ now: () => clock.now() });
    try {
      const integration = await platform.createIntegration();
      const certificatePath = write('reload-next.cer', next.certificatePem);
      const moduleRef = await Test.createTestingModule({
        imports: [
          PlatformAuthModule.forRoot({
            ...integration.moduleOptions,
            name: 'billing',
            clock,
            logger: new RecordingLogger(),
            startupCheck: 'off',
            next: { privateKeyPath: write('reload-next.key', next.privateKeyPem), certificatePath },
            credentialsReloadIntervalMs: INTERVAL,
          }),
        ],
      }).compile();
      await moduleRef.init();
      try {
        const tokens = moduleRef.get<TokenProvider>(getTokenProviderToken('billing'));
        rmSync(certificatePath);
        mkdirSync(certificatePath);
        clock.advance(INTERVAL);
        const reload = await eventually(() => {
          const status = tokens.status().credentials.reload;
          expect(status.state).toBe('rejected');
          return status;
        });
        expect(reload.problems).toEqual([
          expect.stringMatching(
            /^next\.certificatePath \(PLATFORM_BILLING_NEXT_CERTIFICATE_PATH\): certificate file .* is not a regular file/,
          ),
        ]);
      } finally {
        await moduleRef.close();
      }
    } finally {
      await platform.close();
    }
  });
});
