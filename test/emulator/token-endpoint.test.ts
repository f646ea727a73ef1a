import { createPrivateKey, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type RegisteredIntegration,
  type TestCredentials,
  type TokenRequestRule,
} from 'nestjs-platform-auth/testing';
import { AssertionFactory, readTokenResponse, requestToken, type AssertionParts } from './emulator-test-kit.js';

const clock = new FakeClock(Date.now());
let credentials: TestCredentials;
let strangerCredentials: TestCredentials;
let platform: PlatformEmulator;
let integration: RegisteredIntegration;
let assertions: AssertionFactory;

beforeAll(async () => {
  [credentials, strangerCredentials] = await Promise.all([createTestCredentials(), createTestCredentials()]);
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  integration = platform.registerIntegration({
    certificatePem: credentials.certificatePem,
    name: 'token endpoint tests',
  });
  assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
});

afterAll(() => platform.close());

const nowSeconds = (): number => Math.floor(clock.now() / 1000);

async function expectRejected(
  response: { status: number; headers: Headers; body: Record<string, unknown> },
  expected: { status?: number; error: string; rule: TokenRequestRule; description: RegExp },
): Promise<void> {
  expect(response.status).toBe(expected.status ?? 400);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.body).toEqual({
    error: expected.error,
    error_description: expect.stringMatching(expected.description),
  });
  const record = platform.journal.at(-1)!;
  expect(record).toMatchObject({
    verdict: 'rejected',
    rule: expected.rule,
    error: expected.error,
    status: response.status,
  });
}

describe('token endpoint: a valid assertion', () => {
  it('is exchanged for an opaque Bearer token with expires_in, not cacheable', async () => {
    const claims = assertions.validClaims(clock.now());
    const response = await requestToken(platform, await assertions.sign({ nowMs: clock.now(), claims }));

    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.body).toEqual({
      access_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 600,
    });
    expect(platform.journal.at(-1)).toMatchObject({
      verdict: 'accepted',
      status: 200,
      machineId: integration.machineId,
      header: { alg: 'RS256', typ: 'JWT' },
      claims,
    });
  });

  it('is accepted base64-wrapped (an open point of the contract: tokenEncoding base64), by default', async () => {
    const jwt = await assertions.sign({ nowMs: clock.now() });
    const response = await requestToken(platform, Buffer.from(jwt).toString('base64'));
    expect(response.status).toBe(200);
  });

  it('matches iss to the thumbprint ignoring case', async () => {
    const jwt = await assertions.sign({ nowMs: clock.now(), claims: { iss: integration.thumbprint.toLowerCase() } });
    expect((await requestToken(platform, jwt)).status).toBe(200);
  });

  it('accepts a form whose Content-Type carries a UTF-8 charset', async () => {
    const body = new URLSearchParams({
      grant_type: 'clientcertificate',
      client_id: 'clientcertificate',
      token: await assertions.sign({ nowMs: clock.now() }),
    });
    const response = await fetch(platform.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
      body: body.toString(),
    });
    expect(response.status).toBe(200);
  });
});

describe('token endpoint: request rules', () => {
  it('takes POST only (405, Allow: POST)', async () => {
    const response = await readTokenResponse(await fetch(platform.tokenUrl));
    await expectRejected(response, {
      status: 405,
      error: 'invalid_request',
      rule: 'method',
      description: /method GET is not allowed/,
    });
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('takes application/x-www-form-urlencoded only', async () => {
    const token = await assertions.sign({ nowMs: clock.now() });
    const response = await readTokenResponse(
      await fetch(platform.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'clientcertificate', client_id: 'clientcertificate', token }),
      }),
    );
    await expectRejected(response, {
      error: 'invalid_request',
      rule: 'content-type',
      description: /Content-Type is 'application\/json'.*x-www-form-urlencoded/,
    });
  });

  it('refuses a form in a charset other than UTF-8', async () => {
    const response = await readTokenResponse(
      await fetch(platform.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=ISO-8859-1' },
        body: 'grant_type=clientcertificate',
      }),
    );
    await expectRejected(response, {
      error: 'invalid_request',
      rule: 'content-type',
      description: /charset is 'iso-8859-1'.*UTF-8/,
    });
  });

  it('refuses a body over 64 KiB declared by Content-Length, and closes the connection', async () => {
    const response = await readTokenResponse(
      await fetch(platform.tokenUrl, { method: 'POST', body: new URLSearchParams({ token: 'x'.repeat(70_000) }) }),
    );
    await expectRejected(response, { error: 'invalid_request', rule: 'body-size', description: /exceeds 64 KiB/ });
    expect(response.headers.get('connection')).toBe('close');
  });

  it('refuses a chunked body as soon as it passes 64 KiB', async () => {
    const chunk = new TextEncoder().encode('token=' + 'x'.repeat(16 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1;
        if (sent > 8) controller.close();
        else controller.enqueue(chunk);
      },
    });
    const response = await readTokenResponse(
      await fetch(platform.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
        duplex: 'half',
      }),
    );
    await expectRejected(response, { error: 'invalid_request', rule: 'body-size', description: /exceeds 64 KiB/ });
  });

  it('refuses a parameter sent twice (RFC 6749 §3.2)', async () => {
    const form = new URLSearchParams({
      grant_type: 'clientcertificate',
      client_id: 'clientcertificate',
      token: await assertions.sign({ nowMs: clock.now() }),
    });
    form.append('grant_type', 'clientcertificate');
    const response = await readTokenResponse(await fetch(platform.tokenUrl, { method: 'POST', body: form }));
    await expectRejected(response, {
      error: 'invalid_request',
      rule: 'duplicate-parameter',
      description: /grant_type appear more than once/,
    });
  });

  it('wants grant_type', async () => {
    const response = await requestToken(platform, await assertions.sign({ nowMs: clock.now() }), {
      grant_type: undefined,
    });
    await expectRejected(response, {
      error: 'invalid_request',
      rule: 'grant_type',
      description: /grant_type is missing/,
    });
  });

  it('supports only grant_type=clientcertificate', async () => {
    const response = await requestToken(platform, await assertions.sign({ nowMs: clock.now() }), {
      grant_type: 'client_credentials',
    });
    await expectRejected(response, {
      error: 'unsupported_grant_type',
      rule: 'grant_type',
      description: /"client_credentials".*only 'clientcertificate'/,
    });
  });

  it.each([
    ['missing', undefined, /client_id is missing/],
    ['another value', 'my-client', /client_id is "my-client".*literal 'clientcertificate'/],
  ])('refuses client_id %s as invalid_client', async (_case, clientId, description) => {
    const response = await requestToken(platform, await assertions.sign({ nowMs: clock.now() }), {
      client_id: clientId,
    });
    await expectRejected(response, { error: 'invalid_client', rule: 'client_id', description });
  });

  it('wants token', async () => {
    const response = await requestToken(platform, undefined);
    await expectRejected(response, {
      error: 'invalid_request',
      rule: 'token',
      description: /token \(the signed JWT\) is missing/,
    });
  });

  it.each([
    ['random text', 'not-a-jwt', /neither a compact JWT .* nor base64 of one/],
    [
      'base64 of something else',
      Buffer.from('hello world').toString('base64'),
      /base64, but what it encodes is not a compact JWT/,
    ],
    ['an encrypted JWT (five segments)', 'eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d', /encrypted JWT \(JWE\)/],
    ['a JWT whose header is not JSON', 'bm90IGpzb24.eyJhIjoxfQ.c2ln', /header is not a base64url-encoded JSON object/],
    [
      'a JWT whose payload is not a JSON object',
      'eyJhbGciOiJSUzI1NiJ9.WzEsMl0.c2ln',
      /payload is not a base64url-encoded JSON object/,
    ],
  ])('refuses %s as not a JWT', async (_case, token, description) => {
    await expectRejected(await requestToken(platform, token), {
      error: 'invalid_request',
      rule: 'jwt-format',
      description,
    });
  });
});

describe('token endpoint: assertion rules (docs/platform-contract.md#assertion)', () => {
  const cases: Array<{
    rule: TokenRequestRule;
    name: string;
    parts: () => Omit<AssertionParts, 'nowMs'>;
    error: string;
    description: RegExp;
  }> = [
    {
      rule: 'alg',
      name: 'alg RS384',
      parts: () => ({ header: { alg: 'RS384', typ: 'JWT' } }),
      error: 'invalid_request',
      description: /alg is "RS384"; the platform requires RS256/,
    },
    {
      rule: 'alg',
      name: 'alg PS256',
      parts: () => ({ header: { alg: 'PS256', typ: 'JWT' } }),
      error: 'invalid_request',
      description: /alg is "PS256"; the platform requires RS256/,
    },
    {
      rule: 'alg',
      name: 'alg HS256 (a shared secret)',
      parts: () => ({ header: { alg: 'HS256', typ: 'JWT' }, key: randomBytes(32) }),
      error: 'invalid_request',
      description: /alg is "HS256"/,
    },
    {
      rule: 'typ',
      name: 'typ at+jwt',
      parts: () => ({ header: { alg: 'RS256', typ: 'at+jwt' } }),
      error: 'invalid_request',
      description: /typ is "at\+jwt"; the platform requires JWT/,
    },
    {
      rule: 'typ',
      name: 'no typ',
      parts: () => ({ header: { alg: 'RS256' } }),
      error: 'invalid_request',
      description: /typ is missing; the platform requires JWT/,
    },
    ...(['jti', 'iss', 'sub', 'aud', 'iat', 'nbf', 'exp'] as const).map((claim) => ({
      rule: 'claims' as const,
      name: `no ${claim}`,
      parts: () => ({ claims: { [claim]: undefined } }),
      error: 'invalid_request',
      description: new RegExp(`missing required claim\\(s\\) ${claim}\\b`),
    })),
    {
      rule: 'claims',
      name: 'iat as a string',
      parts: () => ({ claims: { iat: String(nowSeconds()) } }),
      error: 'invalid_request',
      description: /iat must be a NumericDate/,
    },
    {
      rule: 'claims',
      name: 'jti as a number',
      parts: () => ({ claims: { jti: 42 } }),
      error: 'invalid_request',
      description: /jti must be a non-empty string, got 42/,
    },
    {
      rule: 'claims',
      name: 'aud as a number',
      parts: () => ({ claims: { aud: 443 } }),
      error: 'invalid_request',
      description: /aud must be a string/,
    },
    {
      rule: 'iss',
      name: 'iss not a registered thumbprint',
      parts: () => ({ claims: { iss: strangerCredentials.thumbprint } }),
      error: 'invalid_client',
      description:
        /iss ".*" is not the thumbprint of any registered certificate \(the certificate is not registered, or the configured thumbprint is wrong\)/,
    },
    {
      rule: 'iss',
      name: 'iss a SHA-256 thumbprint where SHA-1 is registered',
      parts: () => ({ claims: { iss: 'AB'.repeat(32) } }),
      error: 'invalid_client',
      description:
        /not the thumbprint of any registered certificate \(it has 64 hex characters; a sha1 thumbprint has 40\)/,
    },
    {
      rule: 'iss',
      name: 'iss with colons',
      parts: () => ({ claims: { iss: integration.thumbprint.match(/../g)!.join(':') } }),
      error: 'invalid_client',
      description: /colons or spaces/,
    },
    {
      rule: 'signature',
      name: 'a signature by another key',
      parts: () => ({ key: createPrivateKey(strangerCredentials.privateKeyPem) }),
      error: 'invalid_client',
      description: /signature does not verify with the certificate registered for iss/,
    },
    {
      rule: 'sub',
      name: 'sub another machineId',
      parts: () => ({ claims: { sub: randomUUID() } }),
      error: 'invalid_client',
      description: /sub ".*" is not the machineId/,
    },
    {
      rule: 'aud',
      name: 'aud another host',
      parts: () => ({ claims: { aud: 'platform.example.com' } }),
      error: 'invalid_grant',
      description: /aud is "platform.example.com"; the platform expects the single string "127\.0\.0\.1:\d+"/,
    },
    {
      rule: 'aud',
      name: 'aud an array holding the right audience',
      parts: () => ({ claims: { aud: [platform.audience] } }),
      error: 'invalid_grant',
      description: /aud is an array .*single string/,
    },
    {
      rule: 'lifetime',
      name: 'exp 301 s after iat',
      parts: () => ({ claims: { exp: nowSeconds() + 301 } }),
      error: 'invalid_grant',
      description: /exp - iat is 301 s; the JWT lifetime must not exceed 300 s/,
    },
    {
      rule: 'nbf-before-iat',
      name: 'nbf 301 s before iat',
      parts: () => ({ claims: { nbf: nowSeconds() - 301 } }),
      error: 'invalid_grant',
      description: /nbf is 301 s before iat; at most 300 s/,
    },
    {
      rule: 'expired',
      name: 'exp in the past',
      parts: () => ({ claims: { iat: nowSeconds() - 400, nbf: nowSeconds() - 400, exp: nowSeconds() - 100 } }),
      error: 'invalid_grant',
      description: /the JWT has expired: exp is .*, platform time is .*clocks out of sync/,
    },
    {
      rule: 'not-yet-valid',
      name: 'nbf in the future',
      parts: () => ({ claims: { iat: nowSeconds() + 60, nbf: nowSeconds() + 60, exp: nowSeconds() + 300 } }),
      error: 'invalid_grant',
      description: /the JWT is not valid yet: nbf is .*clocks out of sync/,
    },
  ];

  it.each(cases)('refuses $name ($rule → $error)', async ({ parts, error, rule, description }) => {
    const jwt = await assertions.sign({ nowMs: clock.now(), ...parts() });
    await expectRejected(await requestToken(platform, jwt), { error, rule, description });
  });

  it('refuses an unsigned JWT (alg none)', async () => {
    const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode(assertions.validClaims(clock.now()))}.`;
    await expectRejected(await requestToken(platform, unsigned), {
      error: 'invalid_request',
      rule: 'alg',
      description: /alg is "none"/,
    });
  });

  it('refuses a validly signed JWT whose payload was altered afterwards', async () => {
    const [header, , signature] = (await assertions.sign({ nowMs: clock.now() })).split('.');
    const forgedClaims = Buffer.from(JSON.stringify(assertions.validClaims(clock.now()))).toString('base64url');
    await expectRejected(await requestToken(platform, `${header}.${forgedClaims}.${signature}`), {
      error: 'invalid_client',
      rule: 'signature',
      description: /signature does not verify/,
    });
  });

  it('counts exp equal to now as expired', async () => {
    const now = nowSeconds();
    clock.set(now * 1000);
    const jwt = await assertions.sign({ nowMs: clock.now(), claims: { iat: now - 300, nbf: now - 300, exp: now } });
    await expectRejected(await requestToken(platform, jwt), {
      error: 'invalid_grant',
      rule: 'expired',
      description: /expired/,
    });
  });

  it('accepts a JWT from the second nbf is reached', async () => {
    const jwt = await assertions.sign({
      nowMs: clock.now(),
      claims: { nbf: nowSeconds() + 1, iat: nowSeconds() + 1, exp: nowSeconds() + 30 },
    });
    clock.set((nowSeconds() + 1) * 1000);
    expect((await requestToken(platform, jwt)).status).toBe(200);
  });

  it('refuses an integration that is not Active, naming its status', async () => {
    platform.setIntegrationStatus(integration.machineId, 'Suspended');
    try {
      const response = await requestToken(platform, await assertions.sign({ nowMs: clock.now() }));
      await expectRejected(response, {
        error: 'unauthorized_client',
        rule: 'status',
        description: /status is "Suspended"; only an Active integration can authenticate/,
      });
    } finally {
      platform.setIntegrationStatus(integration.machineId, 'Active');
    }
    expect((await requestToken(platform, await assertions.sign({ nowMs: clock.now() }))).status).toBe(200);
  });

  it('refuses a JWT sent a second time (jti replay)', async () => {
    const jwt = await assertions.sign({ nowMs: clock.now() });
    expect((await requestToken(platform, jwt)).status).toBe(200);
    const replay = await requestToken(platform, jwt);
    await expectRejected(replay, {
      error: 'invalid_grant',
      rule: 'jti-replay',
      description: /jti ".*" has been used before/,
    });
  });

  it('refuses a new JWT that reuses the jti of an earlier one', async () => {
    const jti = randomUUID();
    expect((await requestToken(platform, await assertions.sign({ nowMs: clock.now(), claims: { jti } }))).status).toBe(
      200,
    );
    const reused = await requestToken(
      platform,
      await assertions.sign({ nowMs: clock.now(), claims: { jti, exp: nowSeconds() + 200 } }),
    );
    await expectRejected(reused, { error: 'invalid_grant', rule: 'jti-replay', description: /has been used before/ });
  });

  it('treats a JWT as used even when its first presentation was refused', async () => {
    platform.setIntegrationStatus(integration.machineId, 'Suspended');
    const jwt = await assertions.sign({ nowMs: clock.now() });
    expect((await requestToken(platform, jwt)).body.error).toBe('unauthorized_client');
    platform.setIntegrationStatus(integration.machineId, 'Active');
    expect((await requestToken(platform, jwt)).body.error).toBe('invalid_grant');
  });
});

describe('token endpoint: configuration', () => {
  it('answers invalid_client with 401 and WWW-Authenticate when invalidClientStatus is 401', async () => {
    const strict = await PlatformEmulator.start({ invalidClientStatus: 401 });
    try {
      strict.registerIntegration({ certificatePem: credentials.certificatePem, machineId: integration.machineId });
      const jwt = await new AssertionFactory(credentials.privateKeyPem, integration, strict.audience).sign({
        nowMs: Date.now(),
        claims: { sub: 'someone-else' },
      });
      const response = await requestToken(strict, jwt);
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('invalid_client');
      expect(response.headers.get('www-authenticate')).toMatch(/^ClientCertificate .*error="invalid_client"/);
    } finally {
      await strict.close();
    }
  });

  it('accepts only the encodings listed in tokenEncodings', async () => {
    const [jwtOnly, base64Only] = await Promise.all([
      PlatformEmulator.start({ tokenEncodings: ['jwt'] }),
      PlatformEmulator.start({ tokenEncodings: ['base64'] }),
    ]);
    try {
      for (const emulator of [jwtOnly, base64Only])
        emulator.registerIntegration({ certificatePem: credentials.certificatePem, machineId: integration.machineId });
      const sign = (emulator: PlatformEmulator): Promise<string> =>
        new AssertionFactory(credentials.privateKeyPem, integration, emulator.audience).sign({ nowMs: Date.now() });
      const wrap = (jwt: string): string => Buffer.from(jwt).toString('base64');

      expect((await requestToken(jwtOnly, await sign(jwtOnly))).status).toBe(200);
      const wrapped = await requestToken(jwtOnly, wrap(await sign(jwtOnly)));
      expect(wrapped.body).toEqual({
        error: 'invalid_request',
        error_description: expect.stringMatching(/base64 of a JWT; this platform expects the compact JWT as is/),
      });

      expect((await requestToken(base64Only, wrap(await sign(base64Only)))).status).toBe(200);
      const bare = await requestToken(base64Only, await sign(base64Only));
      expect(bare.body).toEqual({
        error: 'invalid_request',
        error_description: expect.stringMatching(/bare compact JWT; this platform expects it base64-encoded/),
      });
      expect(base64Only.journal.at(-1)?.rule).toBe('token-encoding');
    } finally {
      await Promise.all([jwtOnly.close(), base64Only.close()]);
    }
  });

  it('expects a configured audience instead of its host', async () => {
    const custom = await PlatformEmulator.start({ audience: 'platform.example.com' });
    try {
      custom.registerIntegration({ certificatePem: credentials.certificatePem, machineId: integration.machineId });
      const factory = new AssertionFactory(credentials.privateKeyPem, integration, 'platform.example.com');
      expect(custom.audience).toBe('platform.example.com');
      expect((await requestToken(custom, await factory.sign({ nowMs: Date.now() }))).status).toBe(200);
      const hostAudience = await factory.sign({ nowMs: Date.now(), claims: { aud: new URL(custom.url).host } });
      expect((await requestToken(custom, hostAudience)).body.error).toBe('invalid_grant');
    } finally {
      await custom.close();
    }
  });

  it('matches iss against SHA-256 thumbprints when thumbprintAlgorithm is sha256', async () => {
    const sha256 = await PlatformEmulator.start({ thumbprintAlgorithm: 'sha256' });
    try {
      const registered = sha256.registerIntegration({ certificatePem: credentials.certificatePem });
      expect(registered.thumbprint).toMatch(/^[0-9A-F]{64}$/);
      const factory = new AssertionFactory(credentials.privateKeyPem, registered, sha256.audience);
      expect((await requestToken(sha256, await factory.sign({ nowMs: Date.now() }))).status).toBe(200);
      const sha1Issuer = await factory.sign({ nowMs: Date.now(), claims: { iss: credentials.thumbprint } });
      expect((await requestToken(sha256, sha1Issuer)).body).toMatchObject({
        error: 'invalid_client',
        error_description: expect.stringMatching(/has 40 hex characters; a sha256 thumbprint has 64/),
      });
    } finally {
      await sha256.close();
    }
  });
});
