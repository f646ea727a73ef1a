import { createPublicKey, verify, X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AssertionSigner } from 'nestjs-platform-auth';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { wireForTest } from '../support/token-provider-harness.js';
import { createTestCredentials, FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0, 750);
let credentials: TestCredentials;

beforeAll(async () => {
  credentials = await createTestCredentials({ now: NOW });
});

async function signer(
  clock = new FakeClock(NOW),
  lifetime?: number,
  clockMarginSeconds?: number,
): Promise<AssertionSigner> {
  const config = await loadPlatformAuthConfig(
    {
      baseUrl: 'https://platform.example.com',
      machineId: 'a1b2c3d4-machine',
      key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
      assertionLifetimeSeconds: lifetime,
      clockMarginSeconds,
    },
    clock.now(),
  );
  return wireForTest(config, clock).signer;
}

function decodePart(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('AssertionSigner.createAssertion', () => {
  it('produces header and claims exactly per the platform contract, signed RS256 verifiably with the certificate', async () => {
    const jwt = await (await signer()).createAssertion();
    const parts = jwt.split('.');
    expect(parts).toHaveLength(3);
    const [header, payload, signature] = parts as [string, string, string];

    expect(decodePart(header)).toStrictEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = decodePart(payload);
    expect(Object.keys(claims)).toEqual(['jti', 'iss', 'sub', 'aud', 'iat', 'nbf', 'exp']);
    // Back-dated by the default clock margin, 60 s; exp - iat stays the 300 s lifetime.
    const now = Math.floor(NOW / 1000) - 60;
    expect(claims).toStrictEqual({
      jti: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      iss: credentials.thumbprint,
      sub: 'a1b2c3d4-machine',
      aud: 'platform.example.com',
      iat: now,
      nbf: now,
      exp: now + 300,
    });

    // Independent check: node:crypto against the certificate's public key, not the signer's code path.
    const publicKey = createPublicKey(
      new X509Certificate(credentials.certificatePem).publicKey.export({ type: 'spki', format: 'pem' }),
    );
    const signedPart = Buffer.from(`${header}.${payload}`);
    expect(verify('sha256', signedPart, publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
    expect(verify('sha256', Buffer.from(`${header}.${payload}x`), publicKey, Buffer.from(signature, 'base64url'))).toBe(
      false,
    );
  });

  it('uses a new jti for every assertion', async () => {
    const s = await signer();
    const jtis = new Set<unknown>();
    for (let i = 0; i < 50; i += 1) jtis.add(decodePart((await s.createAssertion()).split('.')[1]).jti);
    expect(jtis.size).toBe(50);
  });

  it('takes time from the injected clock, in whole seconds, and honours a shorter lifetime', async () => {
    const clock = new FakeClock(NOW);
    const s = await signer(clock, 120);
    clock.advance(3_600_999);
    const claims = decodePart((await s.createAssertion()).split('.')[1]);
    const expected = Math.floor((NOW + 3_600_999) / 1000) - 60;
    expect(claims).toMatchObject({ iat: expected, nbf: expected, exp: expected + 120 });
  });

  it('keeps the margin within half a short lifetime, and none when the margin is 0', async () => {
    const now = Math.floor(NOW / 1000);
    const short = decodePart((await (await signer(new FakeClock(NOW), 30)).createAssertion()).split('.')[1]);
    expect(short).toMatchObject({ iat: now - 15, nbf: now - 15, exp: now + 15 });
    const strict = decodePart((await (await signer(new FakeClock(NOW), undefined, 0)).createAssertion()).split('.')[1]);
    expect(strict).toMatchObject({ iat: now, nbf: now, exp: now + 300 });
  });

  it('applies a clock offset when asked to (skew correction)', async () => {
    const claims = decodePart((await (await signer()).createAssertion({ clockOffsetMs: -600_000 })).split('.')[1]);
    expect(claims.iat).toBe(Math.floor(NOW / 1000) - 600 - 60);
  });
});
