import { createPublicKey, verify, X509Certificate } from 'node:crypto';
import { inspect } from 'node:util';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssertionSigner, PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { PLATFORM_AUTH_RUNTIME } from '../../lib/platform-auth.module.js';
import { PLATFORM_AUTH_MODULE_OPTIONS } from '../../lib/platform-auth.module-definition.js';
import { acquirePkcs11Module } from '../../lib/credentials/pkcs11/pkcs11.binding.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { keyInToken, problemLines, publicKeyOf, startupError } from './keys-kit.js';
import { SOFTHSM_MODULE, SoftHsm } from './softhsm.js';

const TOKEN = 'platform';
const OTHER = 'other';
const WRONG_PIN = 'wrong-pin-5150';
let hsm: SoftHsm;
let certificatePem: string;
let platform: PlatformEmulator;
let clock: FakeClock;
let machineId: string;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  await hsm.initToken(OTHER);
  // Keys keygen would refuse to make, made by opensc's tool before the library opens the tokens in this process.
  await hsm.pkcs11Tool(
    OTHER,
    '--keypairgen',
    '--key-type',
    'rsa:1024',
    '--label',
    'small',
    '--id',
    '01',
    '--usage-sign',
  );
  await hsm.pkcs11Tool(
    OTHER,
    '--keypairgen',
    '--key-type',
    'EC:prime256v1',
    '--label',
    'ec',
    '--id',
    '02',
    '--usage-sign',
  );
  certificatePem = await keyInToken(hsm.uri(TOKEN, 'platform-auth'));
  clock = new FakeClock(Date.now(), { autoAdvance: true });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  machineId = platform.registerIntegration({ certificatePem }).machineId;
});

afterAll(async () => {
  await platform?.close();
  hsm?.close();
});

/** The module's options with the key in the token; `privateKeyUri` and `certificate` replace the key source's. */
function options(
  overrides: Omit<Partial<PlatformAuthOptions>, 'privateKeyUri' | 'certificate'> & {
    privateKeyUri?: string;
    certificate?: string;
  } = {},
): PlatformAuthOptions {
  const { privateKeyUri = hsm.uri(TOKEN, 'platform-auth'), certificate: _, ...rest } = overrides;
  const certificate = 'certificate' in overrides ? overrides.certificate : certificatePem;
  return { baseUrl: platform.url, machineId, key: { privateKeyUri, certificate }, clock, ...rest };
}

describe('keygen inside a token', () => {
  it('keeps the private key in the token, sensitive and never extractable, as opensc sees it', async () => {
    const listing = await hsm.pkcs11Tool(TOKEN, '--list-objects', '--type', 'privkey', '--label', 'platform-auth');
    expect(listing).toMatch(/Private Key Object; RSA/);
    expect(listing).toMatch(/Access:\s+sensitive, always sensitive, never extractable, local/);
    expect(listing).toMatch(/Usage:\s+sign\n/);
  });

  it("writes a certificate whose public key is the token's, signed by the token's key", async () => {
    const tokenKey = createPublicKey({
      key: await hsm.publicKeyDer(TOKEN, 'platform-auth'),
      format: 'der',
      type: 'spki',
    });
    expect(tokenKey.equals(publicKeyOf(certificatePem))).toBe(true);
    expect(tokenKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(new X509Certificate(certificatePem).verify(tokenKey)).toBe(true);
  });
});

describe('a key in a PKCS#11 token', () => {
  it('exchanges a token through the module; the emulator verifies the signature against the certificate', async () => {
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(options({ logger }))],
    }).compile();
    await moduleRef.init();
    try {
      expect(await moduleRef.get(TokenProvider).getAccessToken()).toMatch(/\S+/);
      expect(platform.journal.at(-1)).toMatchObject({ verdict: 'accepted' });
      const jwt = await moduleRef.get(AssertionSigner).createAssertion();
      const [header, payload, signature] = jwt.split('.');
      expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
      const signed = verify(
        'sha256',
        Buffer.from(`${header}.${payload}`),
        publicKeyOf(certificatePem),
        Buffer.from(signature, 'base64url'),
      );
      expect(signed).toBe(true);
    } finally {
      await moduleRef.close();
    }
    expect(logger.messages('warn')).toEqual([]);
  });

  it('signs concurrently on a few shared sessions, every signature valid', async () => {
    const config = await loadPlatformAuthConfig(options(), clock.now());
    try {
      const inputs = Array.from({ length: 64 }, (_, index) => Buffer.from(`signing input ${index}`));
      const signatures = await Promise.all(inputs.map((input) => config.credentials.key.sign(input)));
      signatures.forEach((signature, index) =>
        expect(verify('sha256', inputs[index], publicKeyOf(certificatePem), signature)).toBe(true),
      );
    } finally {
      await config.credentials.key.close();
    }
  });

  it('two integrations on one token share its library and login; closing one leaves the other signing', async () => {
    const first = await loadPlatformAuthConfig(options(), clock.now());
    const second = await loadPlatformAuthConfig(options(), clock.now());
    try {
      const input = Buffer.from('shared token');
      const both = await Promise.all(
        Array.from({ length: 16 }, (_, index) => (index % 2 ? first : second).credentials.key.sign(input)),
      );
      for (const signature of both) expect(verify('sha256', input, publicKeyOf(certificatePem), signature)).toBe(true);
      await first.credentials.key.close();
      await expect(first.credentials.key.sign(input)).rejects.toMatchObject({ reason: 'closed' });
      expect(verify('sha256', input, publicKeyOf(certificatePem), await second.credentials.key.sign(input))).toBe(true);
    } finally {
      await first.credentials.key.close();
      await second.credentials.key.close();
    }
  });

  it('finds the token by serial= or slot-id= as well as by its label', async () => {
    const library = await acquirePkcs11Module(SOFTHSM_MODULE);
    let serial = '';
    let slotId = 0;
    try {
      for (const slot of library.functions.C_GetSlotList(true)) {
        const info = library.functions.C_GetTokenInfo(slot);
        if (info.label.trim() !== TOKEN) continue;
        serial = info.serialNumber.trim();
        slotId = Number(slot.readBigUInt64LE(0));
      }
    } finally {
      library.release();
    }
    const base = hsm.uri(TOKEN, 'platform-auth').replace(`token=${TOKEN};`, '');
    for (const uri of [
      base.replace('pkcs11:', `pkcs11:serial=${serial};`),
      base.replace('pkcs11:', `pkcs11:slot-id=${slotId};`),
    ]) {
      const config = await loadPlatformAuthConfig(options({ privateKeyUri: uri }), clock.now());
      await config.credentials.key.close();
      expect(config.credentials.key.description).toContain(`token '${TOKEN}'`);
    }
  });

  it('logs in again when the token dropped its sessions', async () => {
    const config = await loadPlatformAuthConfig(options(), clock.now());
    const library = await acquirePkcs11Module(SOFTHSM_MODULE);
    try {
      await config.credentials.key.sign(Buffer.from('before'));
      for (const slot of library.functions.C_GetSlotList(true)) library.functions.C_CloseAllSessions(slot);
      const signature = await config.credentials.key.sign(Buffer.from('after'));
      expect(verify('sha256', Buffer.from('after'), publicKeyOf(certificatePem), signature)).toBe(true);
    } finally {
      await config.credentials.key.close();
      library.release();
    }
  });
});

describe('start-up refuses a URI that cannot sign, naming the problem and never the PIN', () => {
  const uriProblem = async (uri: string, overrides: Parameters<typeof options>[0] = {}) =>
    problemLines(await startupError(options({ privateKeyUri: uri, ...overrides })));

  it('a library that is not there, or is not a PKCS#11 library', async () => {
    expect(await uriProblem(hsm.uri(TOKEN, 'platform-auth', { modulePath: '/nonexistent/libpkcs11.so' }))).toEqual([
      expect.stringMatching(
        /^key\.privateKeyUri \(PLATFORM_PRIVATE_KEY_URI\): module-path '\/nonexistent\/libpkcs11.so' does not exist/,
      ),
    ]);
    expect(await uriProblem(hsm.uri(TOKEN, 'platform-auth', { modulePath: hsm.conf }))).toEqual([
      expect.stringMatching(/module-path '.*softhsm2.conf' cannot be loaded as a PKCS#11 library/),
    ]);
  });

  it('a token that is not there, listing the tokens that are', async () => {
    expect(await uriProblem(hsm.uri('missing', 'platform-auth'))).toEqual([
      expect.stringMatching(
        /no token matches token='missing'; tokens present: ('platform', 'other'|'other', 'platform')$/,
      ),
    ]);
  });

  it('a wrong PIN, and no PIN at all', async () => {
    const error = await startupError(options({ privateKeyUri: hsm.uri(TOKEN, 'platform-auth', { pin: WRONG_PIN }) }));
    expect(problemLines(error)).toEqual([
      expect.stringMatching(/the PIN is wrong for token 'platform' \(the PIN is not shown\)/),
    ]);
    expectNoSecrets(error, [WRONG_PIN]);
    expect(await uriProblem(hsm.uri(TOKEN, 'platform-auth', { noPin: true }))).toEqual([
      expect.stringMatching(/token 'platform' needs the user PIN: add pin-source=file:/),
    ]);
  });

  it('a PIN joined with & into the token label, refused without printing the label', async () => {
    const pin = 'Pq7ZxW93kT';
    const error = await startupError(
      options({
        privateKeyUri: `pkcs11:token=${TOKEN}&pin-value=${pin};object=platform-auth?module-path=${SOFTHSM_MODULE}`,
      }),
    );
    expect(problemLines(error)).toEqual([
      expect.stringMatching(
        /^key\.privateKeyUri \(PLATFORM_PRIVATE_KEY_URI\): 'token' holds another attribute \(name=\) in its value/,
      ),
    ]);
    expectNoSecrets(error, [pin, `${TOKEN}&pin-value`]);
  });

  it('a key that is not in the token, listing the keys that are', async () => {
    expect(await uriProblem(hsm.uri(TOKEN, 'nope'))).toEqual([
      expect.stringMatching(
        /token 'platform' has no private key with object='nope'; its private keys: 'platform-auth'/,
      ),
    ]);
  });

  it('a key that is not RSA-2048: too small, or not RSA', async () => {
    expect(await uriProblem(hsm.uri(OTHER, 'small'))).toContainEqual(
      expect.stringMatching(/the key in token 'other' is a 1024-bit RSA key; at least 2048 bits are required/),
    );
    expect(await uriProblem(hsm.uri(OTHER, 'ec'))).toEqual([
      expect.stringMatching(/the key in token 'other' is not an RSA key/),
    ]);
  });

  it("a key that is not the certificate's", async () => {
    const other = await createTestCredentials();
    expect(await uriProblem(hsm.uri(TOKEN, 'platform-auth'), { certificate: other.certificatePem })).toEqual([
      expect.stringMatching(/the key in token 'platform' \(object='platform-auth'\) is not the certificate's key/),
    ]);
  });

  it('every problem at once, with the other settings', async () => {
    const error = await startupError(
      options({
        baseUrl: 'http://platform.example.com',
        privateKeyUri: hsm.uri(TOKEN, 'platform-auth', { pin: WRONG_PIN }),
        certificate: undefined,
      }),
    );
    expect(problemLines(error)).toEqual([
      expect.stringMatching(/^baseUrl/),
      expect.stringMatching(
        /^key\.certificate .*is required with key\.privateKeyUri: set key\.certificate or key\.certificatePath/,
      ),
      expect.stringMatching(/^key\.privateKeyUri .*the PIN is wrong/),
    ]);
    expectNoSecrets(error, [WRONG_PIN]);
  });

  it('a module that started holds no PIN where the container, its logs or errors show it', async () => {
    // The PIN in the URI itself (pin-value), the riskiest form: SoftHSM checks it, so it is the real one.
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot(
          options({ privateKeyUri: hsm.uri(TOKEN, 'platform-auth', { pin: '48151623' }), logger }),
        ),
      ],
    }).compile();
    await moduleRef.init();
    try {
      await moduleRef.get(TokenProvider).getAccessToken();
      // What the container holds for the integration: its options, the runtime with every part, the services.
      const held = [PLATFORM_AUTH_MODULE_OPTIONS, PLATFORM_AUTH_RUNTIME, TokenProvider, AssertionSigner].map((token) =>
        moduleRef.get(token),
      );
      const rendering = inspect(held, { showHidden: true, depth: 12 });
      expect(rendering).toContain(machineId);
      expect(rendering).not.toContain('48151623');
      expect(rendering).not.toContain('pin-value');
      expect(JSON.stringify(moduleRef.get(TokenProvider).status())).not.toContain('48151623');
    } finally {
      await moduleRef.close();
    }
    expect(logger.lines.map((line) => line.message).join('\n')).not.toContain('48151623');
  });
});
