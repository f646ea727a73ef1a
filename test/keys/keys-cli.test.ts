import { createPublicKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { runCli as runCliInProcess } from '../../lib/cli/cli.program.js';
import { startBin, startCli } from '../cli/cli-harness.js';
import { SOFTHSM_MODULE, SoftHsm, USER_PIN } from './softhsm.js';

const TOKEN = 'cli';
let hsm: SoftHsm;
let platform: PlatformEmulator;
let work: string;

beforeAll(async () => {
  hsm = SoftHsm.create();
  await hsm.initToken(TOKEN);
  platform = await PlatformEmulator.start();
  work = mkdtempSync(join(tmpdir(), 'platform-auth-keys-cli-'));
});
afterAll(async () => {
  await platform?.close();
  hsm?.close();
  rmSync(work, { recursive: true, force: true });
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The command line in this process, as `platform-auth` runs it, with only the variables given. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCliInProcess(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
    cwd: work,
    untilStopped: () => new Promise(() => undefined),
  });
  return { code, stdout, stderr };
}

/** A key made by keygen --key-uri in its own directory, registered on the emulator. */
async function keygen(object: string, uri = hsm.uri(TOKEN, object, { pin: USER_PIN })) {
  const out = join(work, object);
  const result = await cli(['keygen', '--key-uri', uri, '--out', out]);
  return { result, out, certificatePath: join(out, 'publickey.cer') };
}

function envFor(object: string, certificatePath: string, machineId: string): Record<string, string> {
  return {
    PLATFORM_BASE_URL: platform.url,
    PLATFORM_MACHINE_ID: machineId,
    PLATFORM_PRIVATE_KEY_URI: hsm.uri(TOKEN, object),
    PLATFORM_CERTIFICATE_PATH: certificatePath,
  };
}

describe('platform-auth keygen --key-uri', () => {
  it('makes the key in the token, writes publickey.cer and the URI without its PIN, prints the steps and never the PIN', async () => {
    const { result, out, certificatePath } = await keygen('cli-key');
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(out)).toEqual(['private-key.uri', 'publickey.cer']);
    expect(readFileSync(join(out, 'private-key.uri'), 'utf8')).toMatch(
      /^pkcs11:token=cli;object=cli-key;id=(%[0-9a-f]{2}){16}\?module-path=\/usr\/lib\/softhsm\/libsofthsm2.so\n$/,
    );
    const certificate = new X509Certificate(readFileSync(certificatePath));
    const tokenKey = createPublicKey({ key: await hsm.publicKeyDer(TOKEN, 'cli-key'), format: 'der', type: 'spki' });
    expect(certificate.publicKey.equals(tokenKey)).toBe(true);
    expect(certificate.verify(tokenKey)).toBe(true);
    expect(result.stdout).toContain('Generated an RSA 2048-bit key pair inside the token');
    expect(result.stdout).toContain(certificate.fingerprint.replace(/:/g, ''));
    expect(result.stdout).toMatch(
      /PLATFORM_PRIVATE_KEY_URI='pkcs11:token=cli;object=cli-key;id=(%[0-9a-f]{2}){16}\?module-path=\/usr\/lib\/softhsm\/libsofthsm2.so&pin-source=file:\/path\/to\/pin-file'/,
    );
    expect(result.stdout).toContain('Add System integration');
    expect(result.stdout + result.stderr).not.toContain(USER_PIN);
  });

  it('the emulator prints the key URI beside the certificate with a placeholder PIN file, which then exchanges', async () => {
    const { result, certificatePath } = await keygen('emulated');
    expect(result.code, result.stderr).toBe(0);
    const emulator = startCli(['emulator', '--certificate', certificatePath], {}, { cwd: work });
    try {
      await emulator.until((stdout) => stdout.includes('Running until'));
      const printed = Object.fromEntries(
        [...emulator.stdout().matchAll(/^export (PLATFORM_[A-Z_]+)='([^']*)'$/gm)].map((match) => [match[1], match[2]]),
      );
      expect(Object.keys(printed).sort()).toEqual([
        'PLATFORM_BASE_URL',
        'PLATFORM_CERTIFICATE_PATH',
        'PLATFORM_MACHINE_ID',
        'PLATFORM_PRIVATE_KEY_URI',
      ]);
      expect(printed.PLATFORM_PRIVATE_KEY_URI).toMatch(
        /^pkcs11:token=cli;object=emulated;id=(%[0-9a-f]{2}){16}\?module-path=\/usr\/lib\/softhsm\/libsofthsm2.so&pin-source=file:\/path\/to\/pin-file$/,
      );
      expect(emulator.stdout()).toContain('replace /path/to/pin-file');
      expect(emulator.stdout() + emulator.stderr()).not.toContain(USER_PIN);
      const exchanged = await cli(['token', '--no-env-file'], {
        ...printed,
        PLATFORM_PRIVATE_KEY_URI: printed.PLATFORM_PRIVATE_KEY_URI.replace('/path/to/pin-file', hsm.pinFile),
      });
      expect(exchanged.code, exchanged.stdout + exchanged.stderr).toBe(0);
    } finally {
      await emulator.stop();
    }
  });

  it('never replaces or shadows a key, and says so', async () => {
    const first = await keygen('taken');
    expect(first.result.code).toBe(0);
    const again = await cli(['keygen', '--key-uri', hsm.uri(TOKEN, 'taken'), '--out', join(work, 'again')]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/token 'cli' already has a key with object='taken'; keygen never replaces/);
  });

  it('reports a wrong PIN and a malformed URI without printing the PIN', async () => {
    const wrongPin = 'wrong-pin-2718';
    const wrong = await cli([
      'keygen',
      '--key-uri',
      hsm.uri(TOKEN, 'nope', { pin: wrongPin }),
      '--out',
      join(work, 'w'),
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/the PIN is wrong for token 'cli'/);
    const malformed = await cli([
      'keygen',
      '--key-uri',
      `pkcs11:token=cli;pin-value=${wrongPin}`,
      '--out',
      join(work, 'm'),
    ]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/'pin-value' belongs in the query/);
    expect(wrong.stdout + wrong.stderr + malformed.stdout + malformed.stderr).not.toContain(wrongPin);
  });
});

describe('token, assertion and doctor with PLATFORM_PRIVATE_KEY_URI', () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    const { result, certificatePath } = await keygen('in-use');
    expect(result.code).toBe(0);
    const { machineId } = platform.registerIntegration({ certificatePem: readFileSync(certificatePath, 'utf8') });
    env = envFor('in-use', certificatePath, machineId);
  });

  it('token exchanges with the key in the token', async () => {
    const result = await cli(['token', '--no-env-file'], env);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Bearer/);
  });

  it('assertion signs in the token and passes every local rule', async () => {
    const result = await cli(['assertion', '--no-env-file', '--json'], env);
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout) as { checks: { id: string; status: string }[] };
    expect(report.checks.find((check) => check.id === 'signature')?.status).toBe('pass');
  });

  it('doctor describes the key in the token and exchanges', async () => {
    const result = await cli(['doctor', '--no-env-file'], env);
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toMatch(
      /Private key .*test signature verifies with the certificate: an RSA 2048-bit key in PKCS#11 token 'cli' \(object='in-use'\), sensitive and not extractable/,
    );
  });

  it('doctor fails on a wrong PIN with the fix, and prints no PIN', async () => {
    const wrongPin = 'wrong-pin-3141';
    const result = await cli(['doctor', '--no-env-file'], {
      ...env,
      PLATFORM_PRIVATE_KEY_URI: hsm.uri(TOKEN, 'in-use', { pin: wrongPin }),
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/PLATFORM_PRIVATE_KEY_URI\): the PIN is wrong for token 'cli'/);
    expect(result.stdout + result.stderr).not.toContain(wrongPin);
  });

  it('doctor and keygen refuse a PIN joined with & into the token label, and print no PIN', async () => {
    const pin = 'Pq7ZxW93kT';
    const joined = `pkcs11:token=${TOKEN}&pin-value=${pin};object=in-use?module-path=${SOFTHSM_MODULE}`;
    const doctor = await cli(['doctor', '--no-env-file'], { ...env, PLATFORM_PRIVATE_KEY_URI: joined });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/PLATFORM_PRIVATE_KEY_URI\): 'token' holds another attribute \(name=\) in its value/);
    const keygen = await cli(['keygen', '--key-uri', joined.replace('in-use', 'joined'), '--out', join(work, 'j')]);
    expect(keygen.code).toBe(2);
    expect(keygen.stderr).toMatch(/--key-uri 'token' holds another attribute/);
    expect(doctor.stdout + doctor.stderr + keygen.stdout + keygen.stderr).not.toContain(pin);
  });

  it('the built command line exchanges with the key in the token (one process of its own)', async () => {
    const result = await startBin(['token', '--no-env-file'], { env: { ...env, ...hsm.env } }).result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Bearer/);
  });
});
