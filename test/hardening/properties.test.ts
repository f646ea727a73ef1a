import { X509Certificate } from 'node:crypto';
import fc from 'fast-check';
import { compactVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssertionSigner } from 'nestjs-platform-auth';
import { MAX_ASSERTION_LIFETIME_SECONDS } from '../../lib/options/options.constants.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { createTestCredentials, FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';
import {
  json,
  startScriptedTokenServer,
  type ScriptedReply,
  type ScriptedTokenServer,
} from '../support/scripted-token-server.js';
import { createProvider, wireForTest } from '../support/token-provider-harness.js';

let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials({ notBefore: new Date(0), notAfter: new Date(Date.UTC(9999, 0)) });
});

describe('property: every assertion satisfies every assertion rule of the platform contract', () => {
  it('for any clock value and any accepted lifetime', async () => {
    const publicKey = new X509Certificate(credentials.certificatePem).publicKey;
    const signers = new Map<number, { signer: AssertionSigner; clock: FakeClock }>();
    const signerFor = async (lifetime: number) => {
      let entry = signers.get(lifetime);
      if (!entry) {
        const clock = new FakeClock(0);
        const config = await loadPlatformAuthConfig(
          {
            baseUrl: 'https://platform.example.com',
            machineId: 'machine-7',
            key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
            assertionLifetimeSeconds: lifetime,
          },
          Date.now(),
        );
        entry = { signer: wireForTest(config, clock).signer, clock };
        signers.set(lifetime, entry);
      }
      return entry;
    };

    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 253_402_300_799_000 }), // up to 9999-12-31
        fc.integer({ min: 1, max: MAX_ASSERTION_LIFETIME_SECONDS }),
        async (nowMs, lifetime) => {
          const { signer, clock } = await signerFor(lifetime);
          clock.set(nowMs);
          const jwt = await signer.createAssertion();
          const { payload, protectedHeader } = await compactVerify(jwt, publicKey, { algorithms: ['RS256'] });
          const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
          const now = Math.floor(nowMs / 1000);
          expect(protectedHeader).toStrictEqual({ alg: 'RS256', typ: 'JWT' });
          expect(Object.keys(claims).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'jti', 'nbf', 'sub']);
          for (const claim of ['iat', 'nbf', 'exp'] as const) expect(Number.isSafeInteger(claims[claim])).toBe(true);
          const { iat, nbf, exp } = claims as { iat: number; nbf: number; exp: number };
          expect(typeof claims.jti).toBe('string');
          expect(claims.iss).toBe(credentials.thumbprint);
          expect(claims.sub).toBe('machine-7');
          expect(claims.aud).toBe('platform.example.com');
          expect(exp - iat).toBeLessThanOrEqual(300);
          expect(exp - iat).toBe(lifetime);
          expect(iat - nbf).toBeLessThanOrEqual(300);
          expect(nbf).toBeLessThanOrEqual(now);
          expect(now).toBeLessThan(exp);
          expect(jwt.split('.')).toHaveLength(3);
        },
      ),
      { numRuns: 300 },
    );
  });
});

type Reply = { kind: 'token'; expiresIn: number } | { kind: 'status'; status: number } | { kind: 'drop' };
interface Step {
  advanceMs: number;
  callers: number;
  reply: Reply;
}

const replyArbitrary: fc.Arbitrary<Reply> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('token' as const), expiresIn: fc.integer({ min: 1, max: 3_600 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('status' as const), status: fc.constantFrom(400, 401, 429, 500, 503) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'drop' as const }) },
);
const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  advanceMs: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 4_000_000 })),
  callers: fc.integer({ min: 1, max: 6 }),
  reply: replyArbitrary,
});

describe('property: the provider never hands out an expired token and never runs two exchanges at once', () => {
  let server: ScriptedTokenServer;
  beforeAll(async () => {
    server = await startScriptedTokenServer();
  });
  afterAll(() => server.close());

  it('for any sequence of token responses and request timings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArbitrary, { minLength: 1, maxLength: 12 }), async (steps) => {
        const clock = new FakeClock(Date.UTC(2026, 0, 1), { autoAdvance: true });
        const expiryOf = new Map<string, number>();
        const reply =
          (r: Reply): ScriptedReply =>
          (res) => {
            if (r.kind === 'drop') return void res.socket?.destroy();
            if (r.kind === 'status') return json(res, r.status, { error: 'scripted' });
            const accessToken = `t-${expiryOf.size}-${Math.random().toString(36).slice(2)}`;
            expiryOf.set(accessToken, clock.now() + r.expiresIn * 1_000);
            json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: r.expiresIn });
          };
        server.replies = steps.map((s) => reply(s.reply));
        server.fallback = reply({ kind: 'token', expiresIn: 600 });
        server.maxConcurrent = 0;
        const { tokens, destroy } = await createProvider(
          credentials,
          server.url,
          { exchange: { failureBackoffMs: 500 } },
          clock,
        );
        try {
          for (const step of steps) {
            clock.advance(step.advanceMs);
            // The time the callers ask. The auto-advancing clock also moves while a background renewal waits out the
            // minimum interval between exchanges, which a real clock would not do for the callers already served.
            const askedAt = clock.now();
            const results = await Promise.allSettled(
              Array.from({ length: step.callers }, () => tokens.getAccessToken()),
            );
            for (const result of results) {
              if (result.status === 'fulfilled') {
                // The platform's expiry must lie ahead of the time the token was asked for.
                expect(expiryOf.get(result.value)).toBeGreaterThan(askedAt);
              }
            }
          }
        } finally {
          destroy();
        }
        expect(server.maxConcurrent).toBeLessThanOrEqual(1);
      }),
      { numRuns: 60 },
    );
  });
});
