import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { root } from '../cli/cli-harness.js';

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'platform-auth-no-pkcs11-'));
const installed = join(work, 'node_modules', 'nestjs-platform-auth');

/**
 * The built package in an app that has every dependency but the optional PKCS#11 binding: the package's files are
 * copied (a symlink would resolve `pkcs11js` from this repository), the other packages linked.
 */
describe('a pkcs11: URI without the pkcs11js package installed', () => {
  beforeAll(async () => {
    mkdirSync(installed, { recursive: true });
    cpSync(join(root, 'dist'), join(installed, 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(installed, 'package.json'));
    for (const entry of readdirSync(join(root, 'node_modules'))) {
      if (entry === 'pkcs11js' || entry.startsWith('.')) continue;
      symlinkSync(join(root, 'node_modules', entry), join(work, 'node_modules', entry), 'dir');
    }
    const credentials = await createTestCredentials();
    writeFileSync(join(work, 'publickey.cer'), credentials.certificatePem);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('fails at start-up saying what to install, and nothing else', async () => {
    const result = await run(process.execPath, [join(installed, 'dist/cli/main.js'), 'token', '--no-env-file'], {
      cwd: work,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        PLATFORM_BASE_URL: 'https://platform.example.com',
        PLATFORM_MACHINE_ID: 'machine-1',
        PLATFORM_PRIVATE_KEY_URI:
          'pkcs11:token=t;object=k?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=pin-not-to-print-99',
        PLATFORM_CERTIFICATE_PATH: join(work, 'publickey.cer'),
      },
    }).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        output: error.stdout + error.stderr,
      }),
    );
    expect(result.code).toBe(1);
    expect(result.output).toMatch(
      /key.privateKeyUri \(PLATFORM_PRIVATE_KEY_URI\): needs the PKCS#11 binding: npm install pkcs11js/,
    );
    expect(result.output).not.toContain('pin-not-to-print-99');
  });
});
