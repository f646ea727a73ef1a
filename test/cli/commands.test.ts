import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { compactVerify, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateThumbprint } from '../../lib/credentials/thumbprint.util.js';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { expectNoSecrets, JWT_SHAPE, parseJson, pemFragments, root, runCli, tempDir } from './cli-harness.js';

const COMMANDS = ['keygen', 'thumbprint', 'assertion', 'token', 'doctor', 'emulator'];

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let files: ReturnType<typeof tempDir>;
let keyPath: string;
let certificatePath: string;
let secrets: string[];

function env(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    PLATFORM_BASE_URL: platform.url,
    PLATFORM_MACHINE_ID: integration.machineId,
    PLATFORM_PRIVATE_KEY_PATH: keyPath,
    PLATFORM_CERTIFICATE_PATH: certificatePath,
    ...overrides,
  };
}

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration({ name: 'cli command tests' });
  files = tempDir();
  keyPath = files.write('private-key.pem', integration.privateKeyPem);
  certificatePath = files.write('publickey.cer', integration.certificatePem);
  secrets = pemFragments(integration.privateKeyPem);
});

afterAll(async () => {
  files?.remove();
  await platform?.close();
});

describe.concurrent('command line basics', () => {
  it('lists every command in --help and exits 0', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    expect(result.stdout).toMatch(/Exit codes: 0 success, 1 .*, 2 /);
  });

  it("shows each command's options with --help", async () => {
    const results = await Promise.all(COMMANDS.map((command) => runCli([command, '--help'])));
    results.forEach((result, index) => {
      expect(result.code, COMMANDS[index]).toBe(0);
      expect(result.stdout).toContain(`Usage: platform-auth ${COMMANDS[index]}`);
      expect(result.stdout).toContain('--json');
    });
    expect(results[0].stdout).toMatch(/--out DIR/);
    expect(results[4].stdout).toMatch(/--env-file FILE/);
  });

  it('prints the package version with --version', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it.each([
    [[], /Usage: platform-auth <command>/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['keygen', '--bogus'], /Unknown option '--bogus'/],
    [['keygen', '--days', 'ten'], /--days must be a whole number from 1 to 3650, got 'ten'/],
    [['keygen', '--name', 'a,O=evil'], /--name must not contain/],
    [['thumbprint'], /'thumbprint' needs CERT/],
    [['thumbprint', 'a.cer', 'b.cer'], /unexpected argument 'b.cer'/],
    [['emulator', '--port', '70000'], /--port must be a whole number from 0 to 65535/],
  ])('exits 2 on the usage error %j, naming what is wrong', async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).toMatch(message);
  });

  it('reports a usage error as JSON on stdout with --json', async () => {
    const result = await runCli(['keygen', '--days', '0', '--json']);
    expect(result.code).toBe(2);
    expect(parseJson(result)).toEqual({
      ok: false,
      error: { kind: 'usage', message: "--days must be a whole number from 1 to 3650, got '0'" },
    });
  });
});

describe('colour', () => {
  // A pipe is never a TTY: only a stream that says it is one can show the colour choice.
  async function stdoutOf(tty: boolean, env: Record<string, string>): Promise<string> {
    const result = await runCli(['thumbprint', certificatePath], env, { tty });
    expect(result.code).toBe(0);
    return result.stdout;
  }

  it('colours output for a terminal, and not with NO_COLOR, TERM=dumb or a pipe', async () => {
    expect(await stdoutOf(true, {})).toContain('\u001b[32m');
    expect(await stdoutOf(true, { NO_COLOR: '1' })).not.toContain('\u001b[');
    expect(await stdoutOf(true, { TERM: 'dumb' })).not.toContain('\u001b[');
    expect(await stdoutOf(false, {})).not.toContain('\u001b[');
  });
});

describe.concurrent('platform-auth keygen', () => {
  it('writes an RSA-2048 key (mode 0600) and a matching self-signed certificate, and says what to do next', async () => {
    const out = join(files.dir, 'keygen-new');
    const result = await runCli(['keygen', '--out', out, '--days', '30', '--name', 'orders service']);
    expect(result.code).toBe(0);
    const keyFile = join(out, 'private-key.pem');
    const certificateFile = join(out, 'publickey.cer');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);

    const key = createPrivateKey(readFileSync(keyFile));
    const certificate = new X509Certificate(readFileSync(certificateFile));
    expect(readFileSync(keyFile, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(certificate.checkPrivateKey(key)).toBe(true);
    expect(certificate.subject).toBe('CN=orders service');
    expect(certificate.issuer).toBe(certificate.subject);
    const days = (Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / 86_400_000;
    expect(days).toBe(30);

    expect(result.stdout).toContain(certificateThumbprint(certificate));
    expect(result.stdout).toContain('Distribution');
    expect(result.stdout).toContain('Add System integration');
    expect(result.stdout).toContain(`PLATFORM_PRIVATE_KEY_PATH=${keyFile}`);
    expect(result.stdout).toContain(`npx platform-auth emulator --certificate ${certificateFile}`);
    // A moment after it was made, less than 30 whole days are left: days left are rounded down, never overstated.
    expect(result.stdout).toContain('(29 days left)');
    expectNoSecrets(result, pemFragments(readFileSync(keyFile, 'utf8')));
  });

  it('refuses to overwrite existing files and exits 1, leaving them as they were', async () => {
    const out = join(files.dir, 'keygen-twice');
    const first = await runCli(['keygen', '--out', out, '--json']);
    expect(first.code).toBe(0);
    const report = parseJson<{ privateKeyPath: string; certificatePath: string; thumbprint: string }>(first);
    expect(report.thumbprint).toBe(certificateThumbprint(new X509Certificate(readFileSync(report.certificatePath))));
    const before = readFileSync(report.privateKeyPath, 'utf8');

    const second = await runCli(['keygen', '--out', out]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/refusing to overwrite .*private-key\.pem and .*publickey\.cer/);
    expect(readFileSync(report.privateKeyPath, 'utf8')).toBe(before);
  });
});

describe.concurrent('platform-auth thumbprint', () => {
  it('prints the SHA-1 (portal form) and SHA-256 thumbprints and the validity', async () => {
    const result = await runCli(['thumbprint', certificatePath]);
    expect(result.code).toBe(0);
    const certificate = new X509Certificate(integration.certificatePem);
    expect(result.stdout).toMatch(new RegExp(`^SHA-1 +${integration.thumbprint} `, 'm'));
    expect(result.stdout).toMatch(new RegExp(`^SHA-256 +${certificateThumbprint(certificate, 'sha256')}$`, 'm'));
    expect(result.stdout).toMatch(/^Status +valid until .* \(36[45] days left\)$/m);
  });

  it('answers JSON, also for a DER certificate', async () => {
    const der = files.write('publickey.der', Buffer.from(new X509Certificate(integration.certificatePem).raw));
    const result = await runCli(['thumbprint', der, '--json']);
    expect(result.code).toBe(0);
    expect(parseJson(result)).toMatchObject({
      encoding: 'DER',
      thumbprintSha1: integration.thumbprint,
      state: 'valid',
      publicKey: { type: 'rsa', bits: 2048 },
    });
    expect(result.stderr).toMatch(/openssl x509 -inform der/);
  });

  it('names what is wrong with a private key file or a missing file, and exits 1', async () => {
    const [key, missing] = await Promise.all([
      runCli(['thumbprint', keyPath]),
      runCli(['thumbprint', join(files.dir, 'nope.cer')]),
    ]);
    expect(key.code).toBe(1);
    expect(key.stderr).toMatch(/holds a private key, not a certificate/);
    expectNoSecrets(key, secrets);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read certificate file .*nope\.cer.*no such file/);
  });
});

describe.concurrent('platform-auth assertion', () => {
  it("checks every assertion rule on the module's assertion without printing it", async () => {
    const result = await runCli(['assertion'], env());
    expect(result.code).toBe(0);
    for (const rule of [
      'alg',
      'typ',
      'claims',
      'iss',
      'sub',
      'aud',
      'iat',
      'exp - iat',
      'iat - nbf',
      'now < exp',
      'nbf <= now',
      'signature',
    ]) {
      expect(result.stdout).toMatch(new RegExp(`^✓ ${rule.replace(/[-<]/g, '\\$&')} `, 'm'));
    }
    expect(result.stdout).toContain(integration.thumbprint);
    expect(result.stdout).toContain(integration.machineId);
    expect(result.stdout).not.toContain('✗');
    expectNoSecrets(result, secrets);
  });

  it('answers JSON with the header, the claims and every check, and no JWT unless --raw', async () => {
    const result = await runCli(['assertion', '--json'], env());
    expect(result.code).toBe(0);
    const report = parseJson<{
      ok: boolean;
      header: object;
      claims: Record<string, unknown>;
      checks: Array<{ id: string; status: string }>;
      jwt?: string;
    }>(result);
    expect(report.ok).toBe(true);
    expect(report.header).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(report.claims).toMatchObject({
      iss: integration.thumbprint,
      sub: integration.machineId,
      aud: platform.audience,
    });
    expect((report.claims.exp as number) - (report.claims.iat as number)).toBe(300);
    expect(report.checks.map((check) => check.id)).toEqual([
      'alg',
      'typ',
      'claims',
      'iss',
      'signature',
      'sub',
      'status',
      'aud',
      'iat',
      'lifetime',
      'nbf-before-iat',
      'expired',
      'not-yet-valid',
      'jti-replay',
    ]);
    // Only the platform knows the integration's status and the jti it has seen.
    const skipped = report.checks.filter((check) => check.status === 'skip').map((check) => check.id);
    expect(skipped).toEqual(['status', 'jti-replay']);
    expect(report.checks.every((check) => check.status === 'pass' || skipped.includes(check.id))).toBe(true);
    expect(report).not.toHaveProperty('jwt');
    expectNoSecrets(result, secrets);
  });

  it('prints only the JWT with --raw, and it verifies against the certificate', async () => {
    const result = await runCli(['assertion', '--raw'], env());
    expect(result.code).toBe(0);
    const jwt = result.stdout.trim();
    expect(jwt).toMatch(new RegExp(`^${JWT_SHAPE.source}$`));
    await expect(
      compactVerify(jwt, new X509Certificate(integration.certificatePem).publicKey, { algorithms: ['RS256'] }),
    ).resolves.toBeDefined();
    expect(decodeJwt(jwt)).toMatchObject({
      iss: integration.thumbprint,
      sub: integration.machineId,
      aud: platform.audience,
    });
    expect(result.stderr).toMatch(/treat it as a secret/);
  });

  it('lists the configuration problems and exits 1 when the module would not start', async () => {
    const result = await runCli(['assertion'], env({ PLATFORM_PRIVATE_KEY_PATH: join(files.dir, 'missing.pem') }));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^✗ Configuration +key\.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\): cannot read private key file/m,
    );
  });
});

// One case at a time: the CLI reports expires_in as the time from its request to the token's expiry, which other
// cases sharing this process's event loop would stretch past the rounding to whole seconds.
describe('platform-auth token', () => {
  it('exchanges once and reports type, expires_in, clock offset and timing, without the token', async () => {
    // A platform of its own that answers with a known token, so the test can look for it in the output.
    const own = await PlatformEmulator.start();
    try {
      own.registerIntegration({ certificatePem: integration.certificatePem, machineId: integration.machineId });
      const knownToken = 'known-access-token-7f3c9a1e5b2d4c6f8a0b1c2d3e4f5a6b';
      own.injectFault({
        kind: 'status',
        status: 200,
        body: { access_token: knownToken, token_type: 'Bearer', expires_in: 1800 },
      });
      const result = await runCli(['token'], env({ PLATFORM_BASE_URL: own.url }));
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^ {2}token_type +Bearer$/m);
      expect(result.stdout).toMatch(/^ {2}expires_in +1800 s \(until /m);
      // The Date header has whole seconds and a loaded machine answers late: the offset is within a second of 0.
      expect(result.stdout).toMatch(/^ {2}clock offset +(±0|-1|\+1) s/m);
      expect(result.stdout).toMatch(/^ {2}timing +\d+ ms, one attempt$/m);
      expect(result.stdout).toMatch(/access_token +not shown; --show-token prints it/);
      expectNoSecrets(result, [...secrets, knownToken]);
      expect(own.journal[0]?.claims).toMatchObject({ sub: integration.machineId });
    } finally {
      await own.close();
    }
  });

  it('prints the token with --show-token, and the platform accepts it', async () => {
    const result = await runCli(['token', '--show-token', '--json'], env());
    expect(result.code).toBe(0);
    const report = parseJson<{
      ok: boolean;
      tokenType: string;
      expiresIn: number;
      clockOffsetSeconds: number;
      accessToken: string;
    }>(result);
    expect(report).toMatchObject({ ok: true, tokenType: 'Bearer', expiresIn: 600 });
    expect(Math.abs(report.clockOffsetSeconds)).toBeLessThanOrEqual(1);
    const billing = await fetch(`${platform.url}/api/billing`, {
      headers: { Authorization: `Bearer ${report.accessToken}` },
    });
    expect(billing.status).toBe(200);
  });

  it('reads a named integration from PLATFORM_<NAME>_* with --integration', async () => {
    const named = Object.fromEntries(
      Object.entries(env()).map(([name, value]) => [name.replace(/^PLATFORM_/, 'PLATFORM_BILLING_'), value]),
    );
    const result = await runCli(['token', '--integration', 'billing', '--json', '--no-env-file'], named);
    expect(result.code).toBe(0);
    expect(parseJson(result)).toMatchObject({ ok: true, tokenType: 'Bearer' });

    const missing = await runCli(['doctor', '--integration', 'billing', '--no-env-file'], env());
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/PLATFORM_BILLING_MACHINE_ID/);
    const invalid = await runCli(['token', '--integration', 'Billing Prod'], env());
    expect(invalid.code).toBe(2);
  });

  it('leaves the token out of --json unless asked', async () => {
    const result = await runCli(['token', '--json'], env());
    expect(result.code).toBe(0);
    expect(parseJson(result)).not.toHaveProperty('accessToken');
  });

  it('prints the TokenExchangeError fields of a refusal, never the assertion, and exits 1', async () => {
    const [text, json] = await Promise.all([
      runCli(['token'], env({ PLATFORM_MACHINE_ID: 'not-the-machine-id' })),
      runCli(['token', '--json'], env({ PLATFORM_MACHINE_ID: 'not-the-machine-id' })),
    ]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^✗ The token exchange failed: HTTP 400 invalid_client$/m);
    expect(text.stdout).toMatch(/^ {2}status +400$/m);
    expect(text.stdout).toMatch(/^ {2}error +invalid_client$/m);
    expect(text.stdout).toMatch(/^ {2}description +sub "not-the-machine-id" is not the machineId/m);
    expect(text.stdout).toMatch(/^ {2}hint +Wrong machineId/m);
    expectNoSecrets(text, secrets);

    expect(json.code).toBe(1);
    expect(parseJson(json)).toMatchObject({
      ok: false,
      error: {
        reason: 'http_error',
        status: 400,
        oauthError: 'invalid_client',
        attempts: 1,
        hint: expect.stringMatching(/^Wrong machineId/),
      },
    });
    expectNoSecrets(json, secrets);
  });
});
