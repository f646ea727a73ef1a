import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { PlatformUserAuth, PlatformUserAuthModule, platformUserAuthConfig } from 'nestjs-platform-auth/user';
import { PLATFORM_USER_AUTH_ENV } from '../../lib/user/platform-user-auth.constants.js';
import { repositoryRoot } from '../support/docs-blocks.js';
import { pooledRsaKeyPair } from '../support/pooled-test-keys.js';
import { signInAtProvider, startOidcProvider } from './oidc-provider.kit.js';
import { restoreEnv, signIn as signInAtEmulator } from './user-test-kit.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const CLIENT_SECRET = 'docs-client-secret-Rt5Wq8Zm2';
const { privateKey, publicKey } = await pooledRsaKeyPair();
const keyDir = mkdtempSync(join(tmpdir(), 'platform-auth-user-docs-'));
const KEY_PATH = join(keyDir, 'user-client-key.pem');
writeFileSync(KEY_PATH, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
afterAll(() => rmSync(keyDir, { recursive: true, force: true }));

/** The variables of a `<!-- user-config:NAME -->` block of docs/user-sign-in.md, verbatim: the docs are the test. */
function documentedConfiguration(name: string): Record<string, string> {
  const page = readFileSync(join(repositoryRoot, 'docs/user-sign-in.md'), 'utf8');
  const match = new RegExp(
    `<!-- user-config:${name} -->\\s*\`\`\`env\\n([\\s\\S]*?)\`\`\`\\s*<!-- /user-config -->`,
  ).exec(page);
  if (!match) throw new Error(`docs/user-sign-in.md has no user-config block '${name}'`);
  const variables: Record<string, string> = {};
  for (const line of match[1].split('\n').filter((l) => l.trim() !== '')) {
    const separator = line.indexOf('=');
    variables[line.slice(0, separator)] = line.slice(separator + 1);
  }
  // Every variable the page shows is one the library reads.
  const known = new Set<string>(Object.values(PLATFORM_USER_AUTH_ENV));
  for (const variable of Object.keys(variables)) expect(known, `${name}: ${variable}`).toContain(variable);
  return variables;
}

/**
 * The page's configuration with only the test's URLs and secrets put in (each replaced variable must be on the page),
 * started as the Set-up section shows: `platformUserAuthConfig` through ConfigModule.
 */
async function startDocumented(name: string, replacements: Record<string, string>) {
  const documented = documentedConfiguration(name);
  for (const variable of Object.keys(replacements)) expect(Object.keys(documented)).toContain(variable);
  const saved = { ...process.env };
  Object.assign(process.env, documented, replacements);
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true }),
        PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider()),
      ],
    }).compile();
    return { documented, moduleRef, auth: moduleRef.get(PlatformUserAuth) };
  } finally {
    restoreEnv(saved);
  }
}

const testValues = (baseUrl: string) => ({
  PLATFORM_BASE_URL: baseUrl,
  PLATFORM_USER_REDIRECT_URI: REDIRECT_URI,
  PLATFORM_USER_STATE_SECRET: 'Df4kR8nW2qZ6mT0vB3xL7pH1sJ9cG5yA',
});

describe('the configurations of docs/user-sign-in.md, as written', () => {
  it('platform: a public client on the platform (the emulator) with its paths', async () => {
    const platform = await PlatformEmulator.start();
    try {
      platform.registerUserClient({ clientId: 'web-app', redirectUris: [REDIRECT_URI] });
      const { auth, moduleRef } = await startDocumented('platform', testValues(platform.url));
      const { url, transaction } = await auth.createAuthorizationRequest();
      const tokens = await auth.completeAuthorization(await signInAtEmulator(platform, url), transaction);
      expect(tokens.refreshToken).toBeDefined();
      await moduleRef.close();
    } finally {
      await platform.close();
    }
  });

  it.each([
    ['discovery', { token_endpoint_auth_method: 'none' }, {}],
    [
      'client-secret',
      { token_endpoint_auth_method: 'client_secret_basic', client_secret: CLIENT_SECRET },
      { PLATFORM_USER_CLIENT_SECRET: CLIENT_SECRET },
    ],
    [
      'private-key-jwt',
      {
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' }] },
      },
      { PLATFORM_USER_PRIVATE_KEY_PATH: KEY_PATH },
    ],
  ])('%s: signs in at oidc-provider with a refresh token, and refreshes', async (name, client, secrets) => {
    const op = await startOidcProvider([
      {
        client_id: 'web-app',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        ...client,
      },
    ]);
    try {
      const { auth, moduleRef } = await startDocumented(name, { ...testValues(op.issuer), ...secrets });
      const { url, transaction } = await auth.createAuthorizationRequest();
      const tokens = await auth.completeAuthorization(await signInAtProvider(url, REDIRECT_URI), transaction);
      expect(tokens.idToken).toBeDefined();
      await expect(auth.refresh(tokens.refreshToken!)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await moduleRef.close();
    } finally {
      await op.close();
    }
  });
});
