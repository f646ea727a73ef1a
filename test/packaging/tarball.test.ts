import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { sharedCleanPack } from '../support/packed-package.js';

/** Asynchronous on purpose: the emulator answers from this process, which a synchronous child would block. */
function run(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: app, env, encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'platform-auth-tarball-'));
const app = join(work, 'app');
const installed = join(app, 'node_modules/nestjs-platform-auth');
let tarball: string;
let packedFiles: readonly string[];

/** A README block between `<!-- quick-start:NAME -->` and `<!-- /quick-start -->`, verbatim: the docs are the test. */
function quickStart(name: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = new RegExp(
    `<!-- quick-start:${name.replace('.', '\\.')} -->\\s*\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\s*<!-- /quick-start -->`,
  );
  const match = block.exec(readme);
  if (!match) throw new Error(`README.md has no quick-start block '${name}'`);
  return match[1];
}

/**
 * A fresh app: the tarball unpacked as npm would install it, and the packages it needs linked from this repository's
 * node_modules, so nothing is fetched (CI has no network beyond the registry, and this test needs none).
 */
function installIntoFreshApp(): void {
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry.startsWith('.') || entry === 'nestjs-platform-auth') continue;
    symlinkSync(join(root, 'node_modules', entry), join(app, 'node_modules', entry), 'dir');
  }
  mkdirSync(installed);
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'fresh-app',
      private: true,
      type: 'module',
      dependencies: { 'nestjs-platform-auth': tarball },
    }),
  );
  mkdirSync(join(app, 'src'));
  writeFileSync(join(app, 'tsconfig.json'), quickStart('tsconfig.json'));
  writeFileSync(join(app, 'src/app.module.ts'), quickStart('app.module.ts'));
  writeFileSync(
    join(app, 'src/main.ts'),
    [
      "import 'reflect-metadata';",
      "import { NestFactory } from '@nestjs/core';",
      "import { AppModule, MessagesClient } from './app.module.js';",
      '',
      'const app = await NestFactory.createApplicationContext(AppModule, { logger: false });',
      "const status = await app.get(MessagesClient).send('hello');",
      'console.log(JSON.stringify({ status }));',
      'await app.close();',
    ].join('\n'),
  );
}

beforeAll(async () => {
  ({ tarball, files: packedFiles } = await sharedCleanPack(work));
  installIntoFreshApp();
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    cwd: app,
    stdio: 'pipe',
  });
}, 600_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('npm pack from a clean tree, installed into a fresh app', () => {
  it('packs the build and what users read, and nothing of the sources or tests', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/testing/index.js',
        'dist/cli/main.js',
        'README.md',
        'SECURITY.md',
        'CHANGELOG.md',
        'RELIABILITY.md',
        'docs/cli.md',
        'docs/emulator.md',
        'package.json',
      ]),
    );
    expect(
      packedFiles.filter((file) => /^(lib|test|sample-app|bench|soak|tools)\//.test(file) || file.endsWith('.env')),
    ).toEqual([]);
    // Every relative link of the README resolves inside the package.
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\((?!https?:|#)([^)#]+)/g)].map((match) => match[1]);
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((link) => !packedFiles.includes(link))).toEqual([]);
  });

  it('packs a manifest without install scripts (npm 11 would ask a tarball user to review prepare), and leaves package.json as it was', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const ownManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(Object.keys(manifest.scripts).filter((name) => /^(pre|post)?install$|^prepare$/.test(name))).toEqual([]);
    // Only prepare is left out: a git install still builds with it.
    expect(manifest.scripts).toEqual(
      Object.fromEntries(Object.entries(ownManifest.scripts).filter(([name]) => name !== 'prepare')),
    );
    // The tree npm packed has its package.json back, prepare and all, and nothing left beside it.
    const packedTree = join(dirname(tarball), 'clone');
    expect(readFileSync(join(packedTree, 'package.json'), 'utf8')).toBe(
      readFileSync(join(root, 'package.json'), 'utf8'),
    );
    expect(readdirSync(packedTree).filter((file) => file.includes('packing'))).toEqual([]);
  });

  it("compiles the README's quick start verbatim and makes one authenticated call against the emulator", async () => {
    const platform = await PlatformEmulator.start();
    try {
      const integration = await platform.createIntegration();
      writeFileSync(join(app, 'private-key.pem'), integration.privateKeyPem, { mode: 0o600 });
      writeFileSync(join(app, 'publickey.cer'), integration.certificatePem);
      // The README's .env shape: ConfigModule.forRoot() of the quick start reads it from the working directory.
      writeFileSync(
        join(app, '.env'),
        [
          `PLATFORM_BASE_URL=${platform.url}`,
          `PLATFORM_MACHINE_ID=${integration.machineId}`,
          'PLATFORM_PRIVATE_KEY_PATH=./private-key.pem',
          'PLATFORM_CERTIFICATE_PATH=./publickey.cer',
        ].join('\n'),
      );
      const call = await run(process.execPath, ['dist/main.js'], {});
      expect(call.stderr).toBe('');
      expect(JSON.parse(call.stdout)).toEqual({ status: 202 });
      expect(platform.counters.exchanges.accepted).toBe(1);
      expect(platform.counters.apiCalls.ok).toBe(1);

      // The installed bin, run as the kernel runs it (its shebang), reads the same ./.env.
      const bin = join(installed, 'dist/cli/main.js');
      const [interpreter, ...args] = readFileSync(bin, 'utf8').split('\n', 1)[0].slice(2).split(' ');
      const doctor = await run(interpreter, [...args, bin, 'doctor', '--json'], { PATH: process.env.PATH });
      expect(doctor.stderr).toContain('Read 4 variables from');
      expect(doctor.code).toBe(0);
    } finally {
      await platform.close();
    }
  });
});
