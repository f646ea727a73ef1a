import type { KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Test, type TestingModule } from '@nestjs/testing';
import { SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformUserAuth, PlatformUserAuthModule, isUserAuthError } from 'nestjs-platform-auth/user';
import { pooledRsaKeyPair } from '../support/pooled-test-keys.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const published = await pooledRsaKeyPair();
const other = await pooledRsaKeyPair();

/**
 * An authorization server that publishes `published`'s public key at its `jwks_uri` and signs the ID tokens of its
 * token answers with `signWith`: the published key, or another one, as a forger or a broken server would.
 */
let server: Server;
let issuer: string;
let signWith: KeyObject;
let nonce: string;
let moduleRef: TestingModule | undefined;

beforeEach(async () => {
  server = createServer((req, res) => {
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/openid-configuration')
      return json({
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
      });
    if (req.url === '/jwks')
      return json({
        keys: [{ ...published.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }],
      });
    req.resume();
    req.on('end', () => {
      void new SignJWT({ nonce })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(issuer)
        .setAudience('web-app')
        .setSubject('alice')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(signWith)
        .then((idToken) =>
          json({ access_token: 'access-1', token_type: 'Bearer', expires_in: 600, id_token: idToken }),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await moduleRef?.close();
  moduleRef = undefined;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function signInWithIdTokenSignedBy(key: KeyObject): Promise<unknown> {
  signWith = key;
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformUserAuthModule.forRoot({
        baseUrl: issuer,
        discovery: true,
        clientId: 'web-app',
        redirectUri: REDIRECT_URI,
        scope: 'openid',
        stateSecret: 'Hc5nW2qT8vL1xZ7rK4mB9pD3sF6gJ0yA',
      }),
    ],
  }).compile();
  const auth = moduleRef.get(PlatformUserAuth);
  const { url, transaction } = await auth.createAuthorizationRequest();
  const request = new URL(url);
  nonce = request.searchParams.get('nonce')!;
  const callback = new URL(REDIRECT_URI);
  callback.searchParams.set('code', 'code-1');
  callback.searchParams.set('state', request.searchParams.get('state')!);
  callback.searchParams.set('iss', issuer);
  return auth.completeAuthorization(callback, transaction).catch((error: unknown) => error);
}

describe("ID token signatures, with the discovered server's JWKS", () => {
  it('an ID token signed with the published key is accepted', async () => {
    await expect(signInWithIdTokenSignedBy(published.privateKey)).resolves.toMatchObject({
      accessToken: 'access-1',
      idToken: expect.stringMatching(/^ey/) as unknown,
    });
  });

  it('an ID token signed with another key is refused', async () => {
    const error = await signInWithIdTokenSignedBy(other.privateKey);
    expect(isUserAuthError(error), String(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'invalid_response' });
    expect((error as Error).message).not.toContain('access-1');
  });
});
