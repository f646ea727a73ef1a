import { X509Certificate } from 'node:crypto';
import { inspect } from 'node:util';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformUserAuth, PlatformUserAuthModule } from 'nestjs-platform-auth/user';
import { PLATFORM_USER_AUTH_MODULE_OPTIONS } from '../../lib/user/platform-user-auth.module-definition.js';
import { keyInToken } from '../keys/keys-kit.js';
import { SoftHsm, USER_PIN } from '../keys/softhsm.js';
import { renderReachable } from '../support/reachable-rendering.js';
import { signInAtProvider, startOidcProvider, type OidcProviderFixture } from './oidc-provider.kit.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const TOKEN = 'user-signin';
let hsm: SoftHsm;
let certificatePem: string;
let op: OidcProviderFixture;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  certificatePem = await keyInToken(hsm.uri(TOKEN, 'user-client'), 'user sign-in client');
  op = await startOidcProvider([
    {
      client_id: 'hsm-app',
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'RS256',
      jwks: {
        keys: [
          { ...new X509Certificate(certificatePem).publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' },
        ],
      },
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ]);
});
afterAll(async () => {
  await op?.close();
  hsm?.close();
});

describe('private_key_jwt with a key in a PKCS#11 token (SoftHSM)', () => {
  it('signs the client assertions in the token; the URI with its PIN is gone from the container after start-up', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformUserAuthModule.forRoot({
          baseUrl: op.issuer,
          discovery: true,
          clientId: 'hsm-app',
          clientAuthentication: 'private_key_jwt',
          key: { privateKeyUri: hsm.uri(TOKEN, 'user-client', { pin: USER_PIN }), certificate: certificatePem },
          redirectUri: REDIRECT_URI,
          scope: 'openid offline_access',
          stateSecret: 'Nw7qK2mX9vR4tB1zL6pC3hJ8sD5fG0yA',
        }),
      ],
    }).compile();
    try {
      const auth = moduleRef.get(PlatformUserAuth);
      const { url, transaction } = await auth.createAuthorizationRequest();
      const tokens = await auth.completeAuthorization(await signInAtProvider(url, REDIRECT_URI), transaction);
      await expect(auth.refresh(tokens.refreshToken!)).resolves.toMatchObject({ tokenType: 'Bearer' });
      const dumps = [
        renderReachable(moduleRef, 12),
        inspect(moduleRef.get(PLATFORM_USER_AUTH_MODULE_OPTIONS), { depth: Infinity, showHidden: true }),
      ];
      for (const dump of dumps) {
        expect(dump).not.toContain(`pin-value=${USER_PIN}`);
        expect(dump).not.toContain(certificatePem.split('\n')[1]);
      }
    } finally {
      await moduleRef.close();
    }
  });
});
