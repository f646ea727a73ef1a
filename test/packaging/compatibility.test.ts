import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedCleanPack, type PackedPackage } from '../support/packed-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = join(root, 'test/fixtures/apps');
const work = mkdtempSync(join(tmpdir(), 'platform-auth-compat-'));
const unpacked = join(work, 'unpacked');

/** The apps the Nest CLIs make, with the number of tests their `npm run test:e2e` runs. */
const APPS = [
  { app: 'nest11-cjs-jest', tests: 7, report: ['--json', '--outputFile=e2e-report.json'] },
  { app: 'nest12-esm-vitest', tests: 3, report: ['--reporter=json', '--outputFile=e2e-report.json'] },
] as const;
/** The README's testing recipe, which both apps run as it is. */
const RECIPE = 'test/platform-auth.e2e-spec.ts';

interface CommandResult {
  code: number;
  output: string;
  seconds: number;
}

/** Not the outer test run's variables: a Vitest or npm script inside an app must not think it is this one. */
function appEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(VITEST|npm_package_|npm_lifecycle_|INIT_CWD$|TEST$|NODE_ENV$)/.test(name),
    ),
  );
}

/** Asynchronous, so that both apps install and test side by side. */
function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<CommandResult> {
  const started = performance.now();
  return new Promise((resolvePromise) => {
    execFile(
      command,
      args,
      { cwd, env: appEnvironment(), encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolvePromise({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          output: `${stdout}\n${stderr}`,
          seconds: Math.round((performance.now() - started) / 100) / 10,
        }),
    );
  });
}

interface AppRun {
  dir: string;
  install: CommandResult;
  test?: CommandResult;
}

/** Copies the fixture app, puts the tarball where its package.json expects it, then `npm install` and its e2e test. */
async function installAndTest(app: string, report: readonly string[]): Promise<AppRun> {
  const dir = join(work, app);
  cpSync(join(fixtures, app), dir, { recursive: true });
  cpSync(packed.tarball, join(dir, 'nestjs-platform-auth.tgz'));
  const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir, 300_000);
  if (install.code !== 0) return { dir, install };
  const test = await run('npm', ['run', 'test:e2e', '--', ...report], dir, 180_000);
  return { dir, install, test };
}

/** The declaration file of the package in `dir`, as TypeScript would find it without an `exports` map. */
function declarationsOf(dir: string): string {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    types?: string;
    typings?: string;
    main?: string;
  };
  return join(dir, manifest.types ?? manifest.typings ?? (manifest.main ?? 'index.js').replace(/\.js$/, '.d.ts'));
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

let packed: PackedPackage;
const runs = new Map<string, Promise<AppRun>>();

beforeAll(async () => {
  packed = await sharedCleanPack(work);
  mkdirSync(unpacked);
  execFileSync('tar', ['-xzf', packed.tarball, '-C', unpacked, '--strip-components=1']);
  // Both apps start now and run while the tarball's own checks below do.
  for (const { app, report } of APPS) runs.set(app, installAndTest(app, report));
}, 600_000);

afterAll(async () => {
  await Promise.all(runs.values());
  rmSync(work, { recursive: true, force: true });
}, 600_000);

describe('the tarball', () => {
  it('ships source maps that resolve: every source inlined, every map a .js file names present', () => {
    const maps = packed.files.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    expect(maps.filter((file) => file.endsWith('.d.ts.map'))).toEqual([]);
    const unresolved: string[] = [];
    for (const file of maps) {
      const map = JSON.parse(readFileSync(join(unpacked, file), 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      map.sources.forEach((source, index) => {
        const inlined = typeof map.sourcesContent?.[index] === 'string';
        if (!inlined && !existsSync(resolve(unpacked, dirname(file), source))) unresolved.push(`${file}: ${source}`);
      });
    }
    for (const file of packed.files.filter((path) => path.endsWith('.js'))) {
      const link = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(unpacked, file), 'utf8'))?.[1];
      if (link && !existsSync(join(unpacked, dirname(file), link))) unresolved.push(`${file}: ${link}`);
    }
    expect(unresolved).toEqual([]);
  });

  it('publint reports nothing', async () => {
    const tarball = readFileSync(packed.tarball);
    const { messages, pkg } = await publint({
      pack: { tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength) },
      level: 'suggestion',
    });
    expect(messages.map((message) => formatMessage(message, pkg) ?? message.code)).toEqual([]);
  });

  it('are-the-types-wrong (--profile node16) reports nothing', async () => {
    const attw = await run(
      process.execPath,
      [
        join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'),
        packed.tarball,
        '--profile',
        'node16',
        '--format',
        'json',
      ],
      work,
      60_000,
    );
    // All problems, node10 resolution included, which the node16 profile would forgive: typesVersions covers it.
    const { analysis } = JSON.parse(attw.output) as { analysis: { problems: unknown[] } };
    expect(analysis.problems).toEqual([]);
    expect(attw.code).toBe(0);
  });
});

describe('the apps the Nest CLIs make, with the tarball installed by a plain npm install', () => {
  it.each(APPS)(
    '$app: installs without a peer conflict and passes its own e2e tests',
    async ({ app, tests }) => {
      const { dir, install, test } = await runs.get(app)!;
      // How long the slowest tests of the suite take, in its output.
      console.info(`${app}: npm install ${install.seconds} s, npm run test:e2e ${test?.seconds ?? '-'} s`);
      expect(install.code, install.output).toBe(0);
      expect(install.output).not.toMatch(/ERESOLVE|peer dep/i);
      // What npm installed is this tarball, not a cached copy of an older one.
      const installed = join(dir, 'node_modules/nestjs-platform-auth');
      for (const file of ['package.json', 'dist/index.js', 'dist/cjs/index.js']) {
        expect(sha256(join(installed, file)), file).toBe(sha256(join(unpacked, file)));
      }
      expect(test!.code, test!.output).toBe(0);
      const report = JSON.parse(readFileSync(join(dir, 'e2e-report.json'), 'utf8')) as {
        numPassedTests: number;
        numFailedTests: number;
        numTotalTests: number;
      };
      expect(report).toMatchObject({ numPassedTests: tests, numFailedTests: 0, numTotalTests: tests });
    },
    600_000,
  );

  it('nest11-cjs-jest: lib type-checks against the Nest 11 packages it installed (config 4, axios 4, terminus 11)', async () => {
    const { dir, install } = await runs.get('nest11-cjs-jest')!;
    expect(install.code, install.output).toBe(0);
    const modules = join(dir, 'node_modules');
    const packages = [
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/config',
      '@nestjs/axios',
      '@nestjs/terminus',
      'axios',
      'rxjs',
    ];
    const paths = Object.fromEntries(packages.map((name) => [name, [declarationsOf(join(modules, name))]]));
    const tsconfig = join(work, 'tsconfig.nest11.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: join(root, 'tsconfig.json'),
        compilerOptions: { noEmit: true, typeRoots: [join(root, 'node_modules/@types')], paths },
        include: [join(root, 'lib')],
        exclude: [],
      }),
    );
    const check = await run(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', tsconfig, '--listFiles'],
      work,
      120_000,
    );
    const lines = check.output.split('\n');
    expect(lines.filter((line) => line.includes('error TS'))).toEqual([]);
    expect(check.code).toBe(0);
    // The declarations came from the Nest 11 app, not from this repository's Nest 12.
    expect(lines).toContain(join(modules, '@nestjs/common/index.d.ts'));
    expect(lines.filter((line) => line.startsWith(join(root, 'node_modules/@nestjs/')))).toEqual([]);
  }, 600_000);

  it('pin every dependency in a lockfile that leaves out only the tarball integrity, which changes with every build', () => {
    const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const { app } of APPS) {
      const manifest = JSON.parse(readFileSync(join(fixtures, app, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };
      const lock = JSON.parse(readFileSync(join(fixtures, app, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { dependencies?: Record<string, string>; devDependencies?: Record<string, string> }>;
      };
      for (const version of [...Object.values(manifest.dependencies), ...Object.values(manifest.devDependencies)]) {
        expect(version, app).toMatch(/^(\d+\.\d+\.\d+|file:nestjs-platform-auth\.tgz)$/);
      }
      expect(lock.packages['']).toMatchObject({
        dependencies: manifest.dependencies,
        devDependencies: manifest.devDependencies,
      });
      expect(lock.packages['node_modules/nestjs-platform-auth'], app).toEqual(
        expect.objectContaining({ resolved: 'file:nestjs-platform-auth.tgz', dependencies }),
      );
      expect(lock.packages['node_modules/nestjs-platform-auth'], app).not.toHaveProperty('integrity');
    }
  });

  it("run the README's testing recipe word for word, as the same file in both apps", () => {
    const recipe = readFileSync(join(fixtures, APPS[0].app, RECIPE), 'utf8');
    for (const { app } of APPS) expect(readFileSync(join(fixtures, app, RECIPE), 'utf8'), app).toBe(recipe);
    for (const document of ['README.md', 'docs/compatibility.md']) {
      const text = readFileSync(join(root, document), 'utf8');
      const block = /<!-- recipe:platform-auth\.e2e-spec\.ts -->\s*```ts\n([\s\S]*?)```\s*<!-- \/recipe -->/.exec(text);
      expect(block?.[1], document).toBe(recipe);
    }
  });
});
