import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedCleanPack, type PackedPackage } from '../support/packed-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = join(root, 'test/fixtures/apps');
const work = mkdtempSync(join(tmpdir(), 'platform-auth-compat-'));
const unpacked = join(work, 'unpacked');

/**
 * Hang guards for the apps' own test runners, whose defaults (Jest 5 s a test, Vitest 5 s a test and 10 s a hook)
 * a loaded machine breaks while the apps do nothing wrong: generating a key and booting Nest take what the CPU allows.
 */
const APP_HANG_GUARD = '--testTimeout=300000';
/** The apps the Nest CLIs make, the stack whose install lines they follow, and how many tests their e2e run has. */
const APPS = [
  {
    app: 'nest11-cjs-jest',
    stack: 'nest11',
    tests: 8,
    report: ['--json', '--outputFile=e2e-report.json', APP_HANG_GUARD],
  },
  {
    app: 'nest12-esm-vitest',
    stack: 'nest12',
    tests: 3,
    report: ['--reporter=json', '--outputFile=e2e-report.json', APP_HANG_GUARD, '--hookTimeout=300000'],
  },
] as const;
/** The README's testing recipe, which both apps run as it is. */
const RECIPE = 'test/platform-auth.e2e-spec.ts';
/** Where the docs tell a user to install something, in the order a user meets them. */
const INSTALL_DOCUMENTS = ['README.md', 'docs/operations.md', 'docs/testing.md'];
/** What the docs' lines install: not in a fixture's own manifest, so that only those lines can bring it. */
const INSTALLED_BY_THE_DOCS = [
  'nestjs-platform-auth',
  '@nestjs/axios',
  '@nestjs/config',
  '@nestjs/terminus',
  'axios',
  'msw',
];
/** The MSW example under Jest and the Jest settings it needs, which the Nest 11 app runs as docs/testing.md gives them. */
const MSW_RECIPES = ['platform-auth.msw.e2e-spec.ts', 'jest-e2e.json'];

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

/**
 * Asynchronous, so that both apps install and test side by side. No time limit of its own: a command ends when it
 * has done its work or failed, and the test's hang guard (Vitest's) bounds the rest.
 */
function run(command: string, args: string[], cwd: string): Promise<CommandResult> {
  const started = performance.now();
  return new Promise((resolvePromise) => {
    execFile(
      command,
      args,
      { cwd, env: appEnvironment(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
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

/**
 * The `npm install` commands of the `<!-- install:STACK -->` blocks of the docs, as argument lists: the lines a user
 * of that stack copies. Anything a shell would interpret is refused, so that running them without one is faithful.
 */
function installLines(stack: string): string[][] {
  const lines: string[][] = [];
  for (const document of INSTALL_DOCUMENTS) {
    const text = readFileSync(join(root, document), 'utf8');
    const marked = new RegExp(`<!-- install:${stack} -->\\s*\`\`\`bash\\n([\\s\\S]*?)\`\`\`\\s*<!-- /install -->`, 'g');
    for (const [, block] of text.matchAll(marked)) {
      for (const line of block.split('\n').filter((command) => command.trim() !== '')) {
        if (/[#$`'"|&;<>\\]/.test(line)) throw new Error(`${document}: install:${stack} line needs a shell: ${line}`);
        lines.push(line.trim().split(/\s+/));
      }
    }
  }
  return lines;
}

/**
 * Copies the fixture app (the scaffold the Nest CLI installs), installs it, then runs the docs' install lines for
 * its stack word for word, with the tarball where those lines expect it; then the app's own e2e test.
 */
async function installAndTest(app: string, stack: string, report: readonly string[]): Promise<AppRun> {
  const dir = join(work, app);
  cpSync(join(fixtures, app), dir, { recursive: true });
  const flags = ['--prefer-offline', '--no-audit', '--no-fund'];
  const installs: CommandResult[] = [await run('npm', ['install', ...flags], dir)];
  for (const [command, ...args] of installLines(stack)) {
    if (installs.at(-1)!.code !== 0) break;
    const tarball = args.find((arg) => arg.endsWith('.tgz'));
    if (tarball) {
      mkdirSync(dirname(join(dir, tarball)), { recursive: true });
      cpSync(packed.tarball, join(dir, tarball));
    }
    installs.push(await run(command, [...args, ...flags], dir));
  }
  const install: CommandResult = {
    code: installs.find((result) => result.code !== 0)?.code ?? 0,
    output: installs.map((result) => result.output).join('\n'),
    seconds: Math.round(installs.reduce((sum, result) => sum + result.seconds, 0) * 10) / 10,
  };
  if (install.code !== 0) return { dir, install };
  const test = await run('npm', ['run', 'test:e2e', '--', ...report], dir);
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
  for (const { app, stack, report } of APPS) runs.set(app, installAndTest(app, stack, report));
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
    );
    // All problems, node10 resolution included, which the node16 profile would forgive: typesVersions covers it.
    const { analysis } = JSON.parse(attw.output) as { analysis: { problems: unknown[] } };
    expect(analysis.problems).toEqual([]);
    expect(attw.code).toBe(0);
  });
});

describe("the apps the Nest CLIs make, with the tarball installed by the docs' lines for their stack", () => {
  it.each(APPS)(
    '$app: installs without a peer conflict and passes its own e2e tests',
    async ({ app, tests }) => {
      const { dir, install, test } = await runs.get(app)!;
      // How long the slowest tests of the suite take, in its output.
      console.info(`${app}: npm install ${install.seconds} s, npm run test:e2e ${test?.seconds ?? '-'} s`);
      expect(install.code, install.output).toBe(0);
      expect(install.output).not.toMatch(/ERESOLVE|peer dep/i);
      // The tarball carries no script npm 11 would ask to approve (it lists the others the apps install).
      expect(install.output).not.toMatch(/install-scripts\s+nestjs-platform-auth@/);
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
    );
    const lines = check.output.split('\n');
    expect(lines.filter((line) => line.includes('error TS'))).toEqual([]);
    expect(check.code).toBe(0);
    // The declarations came from the Nest 11 app, not from this repository's Nest 12.
    expect(lines).toContain(join(modules, '@nestjs/common/index.d.ts'));
    expect(lines.filter((line) => line.startsWith(join(root, 'node_modules/@nestjs/')))).toEqual([]);
  }, 600_000);

  it('name for each stack the majors that load under its test runner, and the tarball npm pack writes', () => {
    const majors = { nest11: 4, nest12: 12 } as const;
    for (const { stack } of APPS) {
      const packages = installLines(stack).flatMap(([command, verb, ...args]) => {
        expect([command, verb]).toEqual(['npm', 'install']);
        return args;
      });
      expect(packages, stack).toEqual(
        expect.arrayContaining([
          `./vendor/${basename(packed.tarball)}`,
          `@nestjs/axios@${majors[stack]}`,
          `@nestjs/config@${majors[stack]}`,
          `@nestjs/terminus@${stack === 'nest11' ? 11 : 12}`,
          'axios',
        ]),
      );
      // Every other package named there is one of the docs' (no bare Nest package that would install the latest major).
      expect(packages.filter((arg) => /^@nestjs\/[^@]+$/.test(arg))).toEqual([]);
    }
  });

  it('pin every dependency of the scaffold in a lockfile, and leave what the docs install to their lines', () => {
    for (const { app } of APPS) {
      const manifest = JSON.parse(readFileSync(join(fixtures, app, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };
      const lock = JSON.parse(readFileSync(join(fixtures, app, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { dependencies?: Record<string, string>; devDependencies?: Record<string, string> }>;
      };
      for (const version of [...Object.values(manifest.dependencies), ...Object.values(manifest.devDependencies)]) {
        expect(version, app).toMatch(/^\d+\.\d+\.\d+$/);
      }
      expect(lock.packages['']).toMatchObject({
        dependencies: manifest.dependencies,
        devDependencies: manifest.devDependencies,
      });
      const listed = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies)];
      expect(
        listed.filter((name) => INSTALLED_BY_THE_DOCS.includes(name)),
        app,
      ).toEqual([]);
    }
  });

  it("nest11-cjs-jest: runs docs/testing.md's MSW example under Jest with the settings the docs give, word for word", () => {
    const testing = readFileSync(join(root, 'docs/testing.md'), 'utf8');
    for (const recipe of MSW_RECIPES) {
      const block = new RegExp(
        `<!-- recipe:${recipe.replaceAll('.', '\\.')} -->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`\\s*<!-- /recipe -->`,
      ).exec(testing);
      expect(block?.[1], recipe).toBe(readFileSync(join(fixtures, 'nest11-cjs-jest/test', recipe), 'utf8'));
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
