import { createPrivateKey, sign, X509Certificate } from 'node:crypto';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformUserAuth,
  PlatformUserAuthModule,
  isUserAuthError,
  type PlatformUserAuthOptions,
  type UserAuthError,
} from 'nestjs-platform-auth/user';
import { expectNoSecrets } from '../support/leak-check.js';
import { pooledRsaKeyPair } from '../support/pooled-test-keys.js';
import {
  confirmLogoutAtProvider,
  signInAtProvider,
  startOidcProvider,
  type OidcProviderFixture,
} from './oidc-provider.kit.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const POST_LOGOUT_URI = 'http://127.0.0.1:9/signed-out';
const STATE_SECRET = 'Zq3mV8pK1xR6tW9yB2nC5fH7jL0sD4gA'; // 32 bytes, test only
const CLIENT_SECRET = 'oidc-client-secret-Jd8Kq2Lm5Np7Rs9Tv';
const { privateKey, publicKey } = await pooledRsaKeyPair();
const PRIVATE_KEY_PEM = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

const common = {
  redirect_uris: [REDIRECT_URI],
  post_logout_redirect_uris: [POST_LOGOUT_URI],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
};
const CLIENTS: Record<string, unknown>[] & { client_id: string }[] = [
  { client_id: 'public-app', token_endpoint_auth_method: 'none', ...common },
  {
    client_id: 'basic-app',
    client_secret: CLIENT_SECRET,
    token_endpoint_auth_method: 'client_secret_basic',
    ...common,
  },
  { client_id: 'post-app', client_secret: CLIENT_SECRET, token_endpoint_auth_method: 'client_secret_post', ...common },
  {
    client_id: 'jwt-app',
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' }] },
    ...common,
  },
];

let op: OidcProviderFixture;
let opBelowPath: OidcProviderFixture;
const modules: TestingModule[] = [];
/** A key and its certificate, as an app holding its key in a KMS has them (the emulator issues the pair). */
let kms: { privateKeyPem: string; certificatePem: string };

beforeAll(async () => {
  const emulator = await PlatformEmulator.start();
  try {
    const { privateKeyPem, certificatePem } = await emulator.createIntegration();
    kms = { privateKeyPem, certificatePem };
  } finally {
    await emulator.close();
  }
  const kmsJwk = new X509Certificate(kms.certificatePem).publicKey.export({ format: 'jwk' });
  CLIENTS.push({
    client_id: 'kms-app',
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: { keys: [{ ...kmsJwk, use: 'sig', alg: 'RS256' }] },
    ...common,
  });
  op = await startOidcProvider(CLIENTS);
  opBelowPath = await startOidcProvider(CLIENTS, { path: '/oidc' });
});
afterEach(async () => {
  for (const moduleRef of modules.splice(0)) await moduleRef.close();
});
afterAll(async () => {
  await op?.close();
  await opBelowPath?.close();
});

async function startModule(options: Partial<PlatformUserAuthOptions>, server = op): Promise<PlatformUserAuth> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformUserAuthModule.forRoot({
        baseUrl: new URL(server.issuer).origin,
        issuer: server.issuer,
        discovery: true,
        clientId: 'public-app',
        redirectUri: REDIRECT_URI,
        scope: 'openid offline_access',
        stateSecret: STATE_SECRET,
        ...options,
      }),
    ],
  }).compile();
  modules.push(moduleRef);
  return moduleRef.get(PlatformUserAuth);
}

async function signIn(auth: PlatformUserAuth, choices: Parameters<typeof signInAtProvider>[2] = {}) {
  const { url, transaction } = await auth.createAuthorizationRequest();
  const callback = await signInAtProvider(url, REDIRECT_URI, choices);
  return { url: new URL(url), callback, tokens: () => auth.completeAuthorization(callback, transaction), transaction };
}

async function failureOf(promise: Promise<unknown>): Promise<UserAuthError> {
  const error = await promise.then(
    () => expect.fail('expected a failure'),
    (e: unknown) => e,
  );
  expect(isUserAuthError(error), String(error)).toBe(true);
  return error as UserAuthError;
}

describe('discovery against a certified OpenID Provider', () => {
  it.each([
    ['at the root', () => op],
    ['below a path', () => opBelowPath],
  ])(
    'reads the metadata %s and signs in with its endpoints, the ID token verified with its JWKS',
    async (_, server) => {
      const auth = await startModule({}, server());
      const { url, tokens } = await signIn(auth);
      expect(url.href.startsWith(server().issuer + '/auth?')).toBe(true);
      const signedIn = await tokens();
      expect(signedIn.idToken).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(signedIn.refreshToken).toBeDefined();
      const renewed = await auth.refresh(signedIn.refreshToken!);
      expect(renewed.accessToken).not.toBe(signedIn.accessToken);
    },
  );

  it('without discovery, the same server works through the configured paths', async () => {
    const auth = await startModule({
      discovery: false,
      authorizePath: '/auth',
      tokenPath: '/token',
      scope: 'openid',
    });
    await expect((await signIn(auth)).tokens()).resolves.toMatchObject({ tokenType: 'Bearer' });
  });

  it('refuses at start-up a metadata document that names another issuer', async () => {
    const impostor: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer: 'https://elsewhere.example',
          authorization_endpoint: 'https://elsewhere.example/auth',
          token_endpoint: 'https://elsewhere.example/token',
        }),
      );
    });
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(impostor.address() as AddressInfo).port}`;
      const started = startModule({ baseUrl: issuer, issuer }, { ...op, issuer });
      await expect(started).rejects.toThrow(
        /discovery.*'https:\/\/elsewhere\.example', not 'http:\/\/127\.0\.0\.1:\d+' exactly: refused/s,
      );
      await expect(started).rejects.toMatchObject({ name: 'PlatformAuthConfigError' });
    } finally {
      impostor.closeAllConnections();
      await new Promise<void>((resolve) => impostor.close(() => resolve()));
    }
  });

  it('refuses at start-up an issuer that publishes no metadata', async () => {
    await expect(startModule({ issuer: op.issuer + '/nothing-here', baseUrl: op.issuer })).rejects.toThrow(
      /publishes no metadata/,
    );
  });
});

describe('client authentication at the token and revocation endpoints', () => {
  it.each([
    ['client_secret_basic', { clientId: 'basic-app', clientSecret: CLIENT_SECRET }],
    ['client_secret_post', { clientId: 'post-app', clientSecret: CLIENT_SECRET }],
    ['private_key_jwt', { clientId: 'jwt-app', key: { privateKey: PRIVATE_KEY_PEM } }],
  ] as const)('%s: signs in, refreshes and logs out', async (method, settings) => {
    const auth = await startModule({ clientAuthentication: method, ...settings });
    const signedIn = await (await signIn(auth)).tokens();
    const renewed = await auth.refresh(signedIn.refreshToken!);
    const { refreshTokenRevoked } = await auth.logout(renewed);
    expect(refreshTokenRevoked).toBe(true);
    const error = await failureOf(auth.refresh(renewed.refreshToken!));
    expect(error.reason).toBe('invalid_grant');
  });

  it('private_key_jwt with the application signer (a KMS) and its certificate', async () => {
    const key = createPrivateKey(kms.privateKeyPem);
    const signed: number[] = [];
    const auth = await startModule({
      clientAuthentication: 'private_key_jwt',
      clientId: 'kms-app',
      key: {
        signer: {
          name: 'TestKms',
          sign: (input) => {
            signed.push(input.length);
            return Promise.resolve(new Uint8Array(sign('sha256', input, key)));
          },
        },
        certificate: kms.certificatePem,
      },
    });
    const atStartUp = signed.length;
    expect(atStartUp).toBeGreaterThan(0); // the start-up test signature
    const tokens = await (await signIn(auth)).tokens();
    await auth.refresh(tokens.refreshToken!);
    expect(signed.length).toBe(atStartUp + 2);
  });

  it('private_key_jwt refuses at start-up a signer whose signatures the certificate does not verify', async () => {
    const other = (await pooledRsaKeyPair()).privateKey;
    await expect(
      startModule({
        clientAuthentication: 'private_key_jwt',
        clientId: 'kms-app',
        key: {
          signer: { name: 'TestKms', sign: (input) => Promise.resolve(new Uint8Array(sign('sha256', input, other))) },
          certificate: kms.certificatePem,
        },
      }),
    ).rejects.toThrow(/key\.signer: test signature: .*TestKms/);
  });

  it('a wrong client secret is invalid_client with what to check, and names no secret', async () => {
    const auth = await startModule({
      clientAuthentication: 'client_secret_basic',
      clientId: 'basic-app',
      clientSecret: 'not-the-secret-Xy7Wq2',
    });
    const { tokens, callback } = await signIn(auth);
    const error = await failureOf(tokens());
    expect(error.oauthError).toBe('invalid_client');
    expect(error.message).toMatch(/check clientId, clientAuthentication and its clientSecret/);
    expectNoSecrets(error, ['not-the-secret-Xy7Wq2', CLIENT_SECRET, new URL(callback).searchParams.get('code')!]);
  });

  it('a private_key_jwt key the server does not know is refused the same way', async () => {
    const other = (await pooledRsaKeyPair()).privateKey;
    const auth = await startModule({
      clientAuthentication: 'private_key_jwt',
      clientId: 'jwt-app',
      key: { privateKey: other.export({ format: 'pem', type: 'pkcs8' }).toString() },
    });
    const error = await failureOf((await signIn(auth)).tokens());
    expect(error.oauthError).toBe('invalid_client');
  });

  it('refuses at start-up a method the server does not list', async () => {
    const server = await startOidcProvider(CLIENTS, {
      configuration: { clientAuthMethods: ['none', 'client_secret_basic'] },
    });
    try {
      await expect(
        startModule(
          { clientAuthentication: 'client_secret_post', clientId: 'post-app', clientSecret: CLIENT_SECRET },
          server,
        ),
      ).rejects.toThrow(/does not support client_secret_post/);
    } finally {
      await server.close();
    }
  });
});

describe('scopes, consent and refusals', () => {
  it('offline_access asks for consent, which is what makes the provider issue a refresh token', async () => {
    const auth = await startModule({ scope: 'openid offline_access' });
    const { url, tokens } = await signIn(auth);
    expect(url.searchParams.get('prompt')).toBe('consent');
    expect((await tokens()).refreshToken).toBeDefined();
    const withoutOffline = await startModule({ scope: 'openid' });
    const plain = await signIn(withoutOffline);
    expect(plain.url.searchParams.has('prompt')).toBe(false);
    expect((await plain.tokens()).refreshToken).toBeUndefined();
  });

  it('no scope: the provider refuses, and the error says the server refused (not the user), naming scope', async () => {
    const auth = await startModule({ scope: undefined });
    const { tokens, callback } = await signIn(auth);
    // What oidc-provider answers: access_denied, without a description.
    expect(new URL(callback).searchParams.get('error')).toBe('access_denied');
    expect(new URL(callback).searchParams.has('error_description')).toBe(false);
    const error = await failureOf(tokens());
    expect(error.reason).toBe('server_refused');
    expect(error.message).not.toMatch(/was declined/);
    expect(error.hint).toMatch(/an OpenID Provider needs at least openid/);
  });

  it('a user who aborts on the consent page is reported as declining', async () => {
    const auth = await startModule({});
    const error = await failureOf((await signIn(auth, { consent: 'abort' })).tokens());
    expect(error.reason).toBe('access_denied');
    expect(error.message).toMatch(/declined/);
  });
});

describe('logout at the provider', () => {
  it('returns the end-session URL with id_token_hint and the post-logout redirect, and revokes the refresh token', async () => {
    const auth = await startModule({});
    const tokens = await (await signIn(auth)).tokens();
    const { endSessionUrl, refreshTokenRevoked } = await auth.logout(tokens, {
      postLogoutRedirectUri: POST_LOGOUT_URI,
    });
    expect(refreshTokenRevoked).toBe(true);
    const url = new URL(endSessionUrl!);
    expect(url.origin + url.pathname).toBe(op.issuer + '/session/end');
    expect(url.searchParams.get('id_token_hint')).toBe(tokens.idToken);
    expect(url.searchParams.get('post_logout_redirect_uri')).toBe(POST_LOGOUT_URI);
    // The provider accepts the hint and sends the browser back where asked.
    expect((await confirmLogoutAtProvider(endSessionUrl!)).startsWith(POST_LOGOUT_URI)).toBe(true);
    expect((await failureOf(auth.refresh(tokens.refreshToken!))).reason).toBe('invalid_grant');
  });
});
