import { constants, createHash, createPrivateKey, privateEncrypt, sign, type KeyObject } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AssertionSigningError,
  PlatformAuthModule,
  TokenProvider,
  type PlatformAuthOptions,
  type PlatformAuthSigner,
} from 'nestjs-platform-auth';
import type { SignatureFault } from '../../lib/platform-auth.errors.js';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { signCompactJws } from '../../lib/credentials/compact-jws.util.js';
import { InMemoryAssertionKey } from '../../lib/credentials/in-memory.assertion-key.js';
import { SignerAssertionKey } from '../../lib/credentials/signer.assertion-key.js';
import { PROTECTED_HEADER } from '../../lib/token/assertion.signer.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { pooledRsaKeyPair } from '../support/pooled-test-keys.js';
import { problemLines, startupError } from './keys-kit.js';

let clock: FakeClock;
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let key: KeyObject;

beforeAll(async () => {
  clock = new FakeClock(Date.now(), { autoAdvance: true });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  integration = await platform.createIntegration();
  key = createPrivateKey(integration.privateKeyPem);
});
afterAll(() => platform.close());

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest();
/** A key the integration's certificate does not belong to. */
const otherKey = (await pooledRsaKeyPair()).privateKey;

/** Real signers built from node:crypto, each making one mistake a KMS set-up makes. */
const SIGNATURES: Record<string, (input: Uint8Array) => Uint8Array | string> = {
  good: (input) => sign('sha256', input, key),
  pss: (input) =>
    sign('sha256', input, {
      key,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
    }),
  doubleDigest: (input) => sign('sha256', sha256(input), key),
  bareDigest: (input) => privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, sha256(input)),
  sha512: (input) => sign('sha512', input, key),
  otherInput: (input) => sign('sha256', Buffer.from(Buffer.from(input).toString('utf8').toUpperCase()), key),
  otherKey: (input) => sign('sha256', input, otherKey),
  truncated: (input) => sign('sha256', input, key).subarray(0, 255),
  base64: (input) => Buffer.from(sign('sha256', input, key).toString('base64')),
  string: (input) => sign('sha256', input, key).toString('base64'),
};

function signer(kind: keyof typeof SIGNATURES, name = 'TestKms'): PlatformAuthSigner {
  return { name, sign: (input) => Promise.resolve(SIGNATURES[kind](input) as Uint8Array) };
}

/**
 * The integration with a good signer as its key; `key` overrides the key's settings one at a time. No token at boot:
 * the tests turn the signer bad after start-up and need the next call to sign.
 */
function options({ key, ...overrides }: Partial<PlatformAuthOptions> = {}): PlatformAuthOptions {
  const { certificate } = integration.moduleOptions.key;
  return {
    ...integration.moduleOptions,
    key: { certificate, signer: signer('good'), ...key },
    clock,
    startupCheck: 'off',
    ...overrides,
  };
}

describe('one encoding for every key source', () => {
  it('a signer and a PEM key sign byte-identical signing inputs, and the same JWT for the same key', async () => {
    const payload = new TextEncoder().encode(
      JSON.stringify({ jti: 'fixed', iss: 'ABC', sub: 'm', aud: 'a', iat: 1, nbf: 1, exp: 301 }),
    );
    const seen: Uint8Array[] = [];
    const recording: PlatformAuthSigner = {
      sign: (input) => {
        seen.push(Uint8Array.from(input));
        return Promise.resolve(sign('sha256', input, key));
      },
    };
    const fromPem = await signCompactJws(
      new InMemoryAssertionKey(key, 'privateKey PEM text'),
      PROTECTED_HEADER,
      payload,
    );
    const fromSigner = await signCompactJws(new SignerAssertionKey(recording, keyPublic()), PROTECTED_HEADER, payload);
    expect(Buffer.from(seen[0]).toString('ascii')).toBe(fromPem.split('.').slice(0, 2).join('.'));
    expect(fromSigner).toBe(fromPem);
  });
});

function keyPublic(): KeyObject {
  return new InMemoryAssertionKey(key, 'privateKey PEM text').publicKey;
}

describe('a signer', () => {
  it('exchanges tokens through the module; the emulator verifies against the registered certificate', async () => {
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(options({ logger }))],
    }).compile();
    await moduleRef.init();
    try {
      expect(await moduleRef.get(TokenProvider).getAccessToken()).toMatch(/\S/);
      expect(platform.journal.at(-1)).toMatchObject({ verdict: 'accepted' });
    } finally {
      await moduleRef.close();
    }
    expect(logger.messages('warn')).toEqual([]);
  });

  it('is refused at start-up for each mistake, naming the signer and the likely cause', async () => {
    const expected: Record<Exclude<keyof typeof SIGNATURES, 'good'>, RegExp> = {
      pss: /is an RSASSA-PSS signature; the platform verifies RS256, RSASSA-PKCS1-v1_5 with SHA-256/,
      doubleDigest: /signs the SHA-256 of the SHA-256 of the input/,
      bareDigest: /signs the bare SHA-256 digest without its DigestInfo prefix/,
      sha512: /is an RSASSA-PKCS1-v1_5 signature with SHA512; RS256 needs SHA-256/,
      otherInput: /made with the certificate's key, but over other bytes than the signing input/,
      otherKey: /was not made with the key of the configured certificate/,
      truncated: /returned 255 bytes; an RS256 signature with the certificate's 2048-bit key is 256 bytes/,
      base64: /returned 344 bytes of base64 text; an RS256 signature is 256 raw bytes/,
      string: /returned a string instead of the signature's bytes/,
    };
    for (const [kind, cause] of Object.entries(expected)) {
      const lines = problemLines(await startupError(options({ key: { signer: signer(kind) } })));
      expect(lines, kind).toEqual([
        expect.stringMatching(
          /^key.signer: test signature: the signer \(TestKms\) returned a signature that does not verify/,
        ),
      ]);
      expect(lines[0], kind).toMatch(cause);
    }
  });

  it('is refused on an exchange when it turns wrong after start-up, and nothing reaches the platform', async () => {
    const faults: [keyof typeof SIGNATURES, SignatureFault][] = [
      ['pss', 'pss'],
      ['doubleDigest', 'double-digest'],
      ['otherKey', 'wrong-key'],
      ['truncated', 'wrong-length'],
    ];
    let mode: keyof typeof SIGNATURES = 'good';
    const switching: PlatformAuthSigner = { sign: (input) => Promise.resolve(SIGNATURES[mode](input) as Uint8Array) };
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(options({ key: { signer: switching } }))],
    }).compile();
    await moduleRef.init();
    try {
      const tokens = moduleRef.get(TokenProvider);
      for (const [kind, fault] of faults) {
        mode = kind;
        const requests = platform.journal.length;
        const error = await tokens.getAccessToken().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(error).toBeInstanceOf(AssertionSigningError);
        expect(error).toMatchObject({
          reason: 'bad-signature',
          keySource: 'signer',
          key: 'signer',
          fault,
          expectedBytes: 256,
        });
        expect((error as Error).message).toMatch(/Nothing was sent to the platform\.$/);
        expect(platform.journal.length).toBe(requests);
        expectNoSecrets(error, [integration.privateKeyPem]);
        clock.advance(60_000);
      }
    } finally {
      await moduleRef.close();
    }
  });

  it('that throws is reported by the name of its error, never its message', async () => {
    const secretMessage = 'Access denied for key arn:secret-looking-detail';
    class KmsAccessDenied extends Error {
      override readonly name = 'AccessDeniedException';
    }
    const throwing: PlatformAuthSigner = {
      name: 'AwsKms',
      sign: () => Promise.reject(new KmsAccessDenied(secretMessage)),
    };
    const error = await startupError(options({ key: { signer: throwing } }));
    expect(problemLines(error)).toEqual([
      'key.signer: test signature: the signer (AwsKms) failed to sign (AccessDeniedException); nothing was sent to the platform',
    ]);
    expect(JSON.stringify(error)).not.toContain('secret-looking');
    const direct = await new SignerAssertionKey(throwing, keyPublic()).sign(new Uint8Array(1)).catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(AssertionSigningError);
    expect(direct).toMatchObject({
      keySource: 'signer',
      key: 'signer (AwsKms)',
      reason: 'failed',
      detail: 'AccessDeniedException',
    });
  });

  it('that throws an error with a name that is not a plain identifier is reported by a fixed word', async () => {
    const secret = 'KMS-SECRET-arn:aws:kms:eu-west-1:111122223333:key/SESSION-TOKEN-XYZ';
    const hostileName = `VaultError\n[Nest] 1  - 11/25/2026, 7:00:00 PM   ERROR [TokenProvider] forged line ${secret}`;
    class HostileKmsError extends Error {
      override readonly name = hostileName;
    }
    let failing = false;
    const hostile: PlatformAuthSigner = {
      name: 'HostileKms',
      sign: (input) =>
        failing ? Promise.reject(new HostileKmsError('denied')) : Promise.resolve(SIGNATURES.good(input) as Uint8Array),
    };
    failing = true;
    const refused = await startupError(options({ key: { signer: hostile } }));
    expect(problemLines(refused)).toEqual([
      'key.signer: test signature: the signer (HostileKms) failed to sign (Error); nothing was sent to the platform',
    ]);
    expectNoSecrets(refused, [hostileName, secret, 'forged line']);

    failing = false;
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(options({ key: { signer: hostile }, logger }))],
    }).compile();
    await moduleRef.init();
    let error: unknown;
    try {
      failing = true;
      error = await moduleRef
        .get(TokenProvider)
        .getAccessToken()
        .catch((caught: unknown) => caught);
    } finally {
      await moduleRef.close();
    }
    expect(error).toBeInstanceOf(AssertionSigningError);
    expect(error).toMatchObject({ key: 'signer (HostileKms)', reason: 'failed', detail: 'Error' });
    expect((error as Error).message).toBe(
      'the signer (HostileKms) failed to sign (Error); nothing was sent to the platform',
    );
    // The message, JSON, util.inspect (hidden properties too), the stack and Nest's console and JSON loggers.
    expectNoSecrets(error, [hostileName, secret, 'forged line']);
    const logged = logger.lines.map((line) => line.message).join('\n');
    expect(logged).toContain('Token exchange failed');
    expect(logged).not.toContain('forged line');
    expect(logged).not.toContain(secret);
  });

  it('turns file reloading off with a warning: its key is not a file', async () => {
    const config = await loadPlatformAuthConfig(options({ credentialsReloadIntervalMs: 5_000 }), clock.now());
    await config.credentials.key.close();
    expect(config.credentialsReloadIntervalMs).toBeUndefined();
    expect(config.warnings).toContainEqual(
      expect.objectContaining({
        option: 'credentialsReloadIntervalMs',
        message: 'is ignored: the key is not a PEM file (key.signer); nothing is re-read',
      }),
    );
  });

  it('needs the certificate, an object with sign(), and no PEM key beside it', async () => {
    expect(
      problemLines(await startupError(options({ key: { certificate: undefined }, thumbprint: 'AB'.repeat(20) }))),
    ).toEqual([expect.stringMatching(/^key.certificate \(PLATFORM_CERTIFICATE\): is required with key\.signer/)]);
    expect(problemLines(await startupError(options({ key: { signer: { sign: 'no' } as never } })))).toEqual([
      'key.signer: must be an object with a sign(signingInput: Uint8Array): Promise<Uint8Array> method',
    ]);
    expect(problemLines(await startupError(options({ key: { privateKey: integration.privateKeyPem } })))).toEqual([
      expect.stringMatching(/^key\.signer: set only one of key\.privateKey, key\.signer/),
    ]);
  });
});
