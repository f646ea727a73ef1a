import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { packageRoot, SHARED_PACK_VARIABLE } from './built-package.js';
import { withPlainStack } from './plain-stack.js';

const OUTPUTS = ['dist', 'sample-app/dist'];
/** What the package build and the sample app's build read, besides the installed packages' lockfile. */
const INPUTS = ['lib', 'sample-app', 'tools/build-cjs.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
/**
 * One stamp per checkout: work trees that share one `node_modules` (a symlink to it) would otherwise overwrite each
 * other's stamp, and each run would rebuild.
 */
const stampFile = join(
  packageRoot,
  'node_modules/.cache/platform-auth-build',
  `${createHash('sha256').update(packageRoot).digest('hex').slice(0, 16)}.json`,
);

/**
 * Vitest global set-up: builds the package and the sample app once, from clean output folders, before any test file
 * runs. `npm run build:sample` runs `npm run build` first, so whatever the package build becomes is what is tested.
 * A run whose sources, build scripts and installed packages are those of the last build, and whose output folders
 * hold exactly what that build wrote, uses them as they are, saving the build's seconds.
 * Also makes the run's directory for the one `npm pack` the packaging files share (`sharedCleanPack`): the worker
 * processes inherit its path, and it is removed after the run.
 */
export default function buildOnce(): () => void {
  try {
    return setUp();
  } catch (error) {
    throw withPlainStack(error);
  }
}

function setUp(): () => void {
  const inputs = digest(inputFiles());
  const stamp = existsSync(stampFile) ? (JSON.parse(readFileSync(stampFile, 'utf8')) as Stamp) : undefined;
  if (stamp?.inputs !== inputs || stamp.outputs !== digest(outputFiles())) {
    rmSync(stampFile, { force: true });
    for (const output of OUTPUTS) rmSync(join(packageRoot, output), { recursive: true, force: true });
    execFileSync('npm', ['run', 'build:sample', '--silent'], { cwd: packageRoot, stdio: 'inherit' });
    mkdirSync(join(stampFile, '..'), { recursive: true });
    writeFileSync(stampFile, JSON.stringify({ inputs, outputs: digest(outputFiles()) } satisfies Stamp));
  }
  const packDirectory = mkdtempSync(join(tmpdir(), 'platform-auth-shared-pack-'));
  process.env[SHARED_PACK_VARIABLE] = packDirectory;
  return () => rmSync(packDirectory, { recursive: true, force: true });
}

interface Stamp {
  inputs: string;
  outputs: string;
}

/** The files git would see (committed or not, ignored ones left out), and the lockfile of what npm installed. */
function inputFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z', '--', ...INPUTS], {
    cwd: packageRoot,
    encoding: 'utf8',
  });
  // A file deleted in the work tree but still tracked is not an input.
  return [...listed.split('\0'), 'package-lock.json', 'node_modules/.package-lock.json'].filter(
    (file) => file !== '' && existsSync(join(packageRoot, file)),
  );
}

function outputFiles(): string[] {
  const walk = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
          entry.isDirectory() ? walk(join(dir, entry.name)) : [relative(packageRoot, join(dir, entry.name))],
        )
      : [];
  return OUTPUTS.flatMap((output) => walk(join(packageRoot, output)));
}

/** One hash of the files' names and contents. */
function digest(files: string[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort())
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(packageRoot, file)))
      .update('\0');
  return hash.digest('hex');
}
