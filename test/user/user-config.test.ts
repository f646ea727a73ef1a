import { Test } from '@nestjs/testing';
import { ConfigModule } from '@nestjs/config';
import { describe, expect, it } from 'vitest';
import { PlatformAuthConfigError } from 'nestjs-platform-auth';
import {
  PlatformUserAuth,
  PlatformUserAuthModule,
  PlatformUserSessions,
  platformUserAuthConfig,
  type PlatformUserAuthOptions,
} from 'nestjs-platform-auth/user';
import { expectNoSecrets } from '../support/leak-check.js';
import { restoreEnv } from './user-test-kit.js';

const valid: PlatformUserAuthOptions = {
  baseUrl: 'https://platform.example.com',
  clientId: 'web-app',
  redirectUri: 'https://app.example.com/callback',
  stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha',
};

async function startUp(options: Partial<PlatformUserAuthOptions>): Promise<PlatformAuthConfigError> {
  const error = await Test.createTestingModule({
    imports: [PlatformUserAuthModule.forRoot({ ...valid, ...options })],
  })
    .compile()
    .then(
      () => expect.fail('start-up should fail'),
      (e: unknown) => e,
    );
  expect(error instanceof PlatformAuthConfigError, String(error)).toBe(true);
  return error as PlatformAuthConfigError;
}

describe('start-up validation of user sign-in', () => {
  it('lists every missing setting with its environment variable', async () => {
    const error = await startUp({ baseUrl: '', clientId: '', redirectUri: '', stateSecret: '' });
    expect(error.problems.map((p) => p.setting)).toEqual([
      'baseUrl (PLATFORM_BASE_URL)',
      'clientId (PLATFORM_USER_CLIENT_ID)',
      'redirectUri (PLATFORM_USER_REDIRECT_URI)',
      'stateSecret (PLATFORM_USER_STATE_SECRET)',
    ]);
  });

  it.each([
    ['an http redirect URI off loopback', { redirectUri: 'http://app.example.com/callback' }, /clear text/],
    ['a redirect URI with a fragment', { redirectUri: 'https://app.example.com/cb#x' }, /fragment/],
    ['a relative redirect URI', { redirectUri: '/callback' }, /absolute URL/],
    ['an http platform off loopback', { baseUrl: 'http://platform.example.com' }, /clear text/],
    ['a malformed scope', { scope: 'a  b' }, /single spaces/],
    ['a transaction lifetime over ten minutes', { transactionLifetimeSeconds: 601 }, /30 to 600/],
    ['an authorize path without a slash', { authorizePath: 'authorize' }, /starting with '\/'/],
    [
      'an unknown client authentication',
      { clientAuthentication: 'tls_client_auth' as never },
      /must be one of none, client_secret_basic/,
    ],
    [
      'client_secret_basic without a secret',
      { clientAuthentication: 'client_secret_basic' as const },
      /is required with clientAuthentication client_secret_basic/,
    ],
    ['a client secret a public client would ignore', { clientSecret: 'a-secret-Wq8' }, /clientAuthentication is none/],
    ['a key without private_key_jwt', { key: { privateKeyPath: '/etc/key.pem' } }, /used by private_key_jwt only/],
    ['private_key_jwt without a key', { clientAuthentication: 'private_key_jwt' as const }, /privateKey/],
    ['a path beside discovery', { discovery: true, tokenPath: '/token' }, /not used with discovery/],
    ['discovery that is not a boolean', { discovery: 'yes' as never }, /true or false/],
    ['a revocation path without a slash', { revocationPath: 'revoke' }, /starting with '\/'/],
  ])('refuses %s', async (_name, options, message) => {
    const error = await startUp(options);
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0].message).toMatch(message);
  });

  it('refuses a private_key_jwt key that does not parse, naming the setting and never the text', async () => {
    const text = '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n';
    const error = await startUp({ clientAuthentication: 'private_key_jwt', key: { privateKey: text } });
    expect(error.problems[0].setting).toBe('key.privateKey (PLATFORM_USER_PRIVATE_KEY)');
    expectNoSecrets(error, ['bm90IGEga2V5']);
  });

  it('reads the new settings from their environment variables, a secret as a Secret', () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_USER_DISCOVERY: 'true',
      PLATFORM_USER_CLIENT_AUTH: 'client_secret_post',
      PLATFORM_USER_CLIENT_SECRET: 'env-client-secret-Mv7',
    });
    try {
      const config = platformUserAuthConfig();
      expect(config).toMatchObject({ discovery: true, clientAuthentication: 'client_secret_post' });
      expect(String(config.clientSecret)).toBe('[secret]');
      expect(JSON.stringify(config)).not.toContain('env-client-secret-Mv7');
    } finally {
      restoreEnv(saved);
    }
  });

  it('refuses a short or repetitive state secret without printing it', async () => {
    const short = 'too-short-secret';
    expectNoSecrets(await startUp({ stateSecret: short }), [short]);
    expect((await startUp({ stateSecret: short })).message).toMatch(/16 bytes; use at least 32/);
    const repetitive = 'a'.repeat(40);
    expect((await startUp({ stateSecret: repetitive })).message).toMatch(/distinct bytes/);
  });

  it('accepts http redirect URIs on loopback, and reads the environment through platformUserAuthConfig', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: 'https://platform.example.com',
      PLATFORM_USER_CLIENT_ID: 'web-app',
      PLATFORM_USER_REDIRECT_URI: 'http://localhost:3000/callback',
      PLATFORM_USER_SCOPE: 'profile messages',
      PLATFORM_USER_STATE_SECRET: valid.stateSecret,
    });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ConfigModule.forRoot({ ignoreEnvFile: true }),
          PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider()),
        ],
      }).compile();
      const { url } = await moduleRef.get(PlatformUserAuth).createAuthorizationRequest();
      const parsed = new URL(url);
      expect(parsed.origin + parsed.pathname).toBe('https://platform.example.com/loginservice/connect/authorize');
      expect(parsed.searchParams.get('redirect_uri')).toBe('http://localhost:3000/callback');
      expect(parsed.searchParams.get('scope')).toBe('profile messages');
      await moduleRef.close();
    } finally {
      restoreEnv(saved);
    }
  });

  it('omits scope when none is configured, sends a nonce only for openid, and keeps protocol parameters its own', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformUserAuthModule.forRoot({ ...valid, authorizePath: '/oauth/authorize' })],
    }).compile();
    const auth = moduleRef.get(PlatformUserAuth);
    const plain = new URL((await auth.createAuthorizationRequest()).url);
    expect(plain.pathname).toBe('/oauth/authorize');
    expect(plain.searchParams.has('scope')).toBe(false);
    const oidc = new URL(
      (await auth.createAuthorizationRequest({ scope: 'openid', parameters: { prompt: 'login' } })).url,
    );
    expect(oidc.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(oidc.searchParams.get('prompt')).toBe('login');
    await expect(auth.createAuthorizationRequest({ parameters: { state: 'mine' } })).rejects.toThrow(
      /set by the library/,
    );
    await moduleRef.close();
  });
});

describe('user sign-in options are read as own properties only', () => {
  it('a polluted Object.prototype fills no setting: cookies stay Secure, a missing state secret stays missing', async () => {
    const prototype = Object.prototype as Record<string, unknown>;
    prototype.secureCookies = false;
    prototype.stateSecret = 'attacker-known-secret-attacker-known-secret';
    try {
      const { stateSecret: _omitted, ...withoutSecret } = valid;
      const failure = Test.createTestingModule({
        imports: [PlatformUserAuthModule.forRoot(withoutSecret as PlatformUserAuthOptions)],
      }).compile();
      await expect(failure).rejects.toThrow(/stateSecret \(PLATFORM_USER_STATE_SECRET\)/);

      const moduleRef = await Test.createTestingModule({ imports: [PlatformUserAuthModule.forRoot(valid)] }).compile();
      const sessions = moduleRef.get(PlatformUserSessions);
      const cookie = await sessions.sessionCookie({
        accessToken: 'a',
        tokenType: 'Bearer',
        expiresAt: new Date(Date.now() + 60_000),
      });
      expect(cookie).toMatch(/; Secure/);
      await moduleRef.close();
    } finally {
      delete prototype.secureCookies;
      delete prototype.stateSecret;
    }
  });
});
