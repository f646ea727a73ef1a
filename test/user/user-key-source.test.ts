import { beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError } from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import type { PlatformUserAuthOptions } from 'nestjs-platform-auth/user';
import { resolveUserAuthOptions } from '../../lib/user/user-options.resolver.js';
import { readTableEnv } from '../../lib/options/platform-auth.config.js';
import { PLATFORM_USER_AUTH_OPTIONS } from '../../lib/options/options.table.user.js';

let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials();
});

function options(overrides: Partial<PlatformUserAuthOptions>): PlatformUserAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    clientId: 'web-app',
    redirectUri: 'https://app.example.com/callback',
    stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha',
    clientAuthentication: 'private_key_jwt',
    ...overrides,
  };
}

async function problemsOf(overrides: Partial<PlatformUserAuthOptions>): Promise<PlatformAuthConfigError> {
  const error = await resolveUserAuthOptions(options(overrides), Date.now()).then(
    (config) => config.clientKey?.close(),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PlatformAuthConfigError);
  return error as PlatformAuthConfigError;
}

describe("user sign-in's private_key_jwt takes a KeySource", () => {
  it('opens key: { privateKey, certificate } with no warning', async () => {
    const key = { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem };
    const config = await resolveUserAuthOptions(options({ key }), Date.now());
    try {
      expect(config.clientKey?.source).toBe('pem');
      expect(config.warnings).toEqual([]);
    } finally {
      await config.clientKey?.close();
    }
  });

  it('names a missing key by its option and variable', async () => {
    const missing = await problemsOf({});
    expect(missing.problems.map((p) => p.setting)).toContainEqual('key.privateKey (PLATFORM_USER_PRIVATE_KEY)');
  });

  it('is filled from the PLATFORM_USER_* key variables', () => {
    expect(
      readTableEnv(PLATFORM_USER_AUTH_OPTIONS, {
        PLATFORM_USER_PRIVATE_KEY_PATH: '/keys/client.pem',
        PLATFORM_USER_PRIVATE_KEY_PASSPHRASE: 'pass',
        PLATFORM_USER_CERTIFICATE_PATH: '/keys/client.cer',
        PLATFORM_USER_CLIENT_AUTH: 'private_key_jwt',
      }),
    ).toEqual({
      clientAuthentication: 'private_key_jwt',
      key: { privateKeyPath: '/keys/client.pem', passphrase: 'pass', certificatePath: '/keys/client.cer' },
    });
  });
});

describe('the state secret passes the one key-strength check', () => {
  it('accepts a random hex secret whose text happens to use fewer than 16 symbols', async () => {
    // 32 distinct bytes written with the digits 0-9 and a-e only: random-looking bytes, 15 symbols of text.
    const hex = Array.from({ length: 32 }, (_, i) =>
      (((i % 15) << 4) | ((i + Math.floor(i / 15)) % 15)).toString(16).padStart(2, '0'),
    ).join('');
    expect(new Set(hex).size).toBeLessThan(16);
    const config = await resolveUserAuthOptions(
      options({ clientAuthentication: 'none', stateSecret: hex }),
      Date.now(),
    );
    expect(config.clientAuthentication).toBe('none');
  });

  it('refuses a secret with fewer than 16 distinct bytes', async () => {
    const patterned = 'abcdefghijkl'.repeat(3);
    const error = await problemsOf({ clientAuthentication: 'none', stateSecret: patterned });
    expect(error.problems.map((p) => p.message)).toEqual([expect.stringMatching(/distinct bytes/)]);
    expect(error.message).not.toContain(patterned);
  });
});
