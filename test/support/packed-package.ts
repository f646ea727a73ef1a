import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { SHARED_PACK_VARIABLE } from './built-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface PackedPackage {
  /** The tarball `npm pack` wrote, as users would install it. */
  readonly tarball: string;
  /** The paths inside it, `package/` left out: `dist/index.js`, `README.md`, … */
  readonly files: readonly string[];
}

/**
 * `npm pack` (its `prepack` builds both builds) of a copy of the files git knows, committed or not, ignored ones
 * left out: what a fresh clone packs, without this work tree's dist/ or .env. Writes under `work`.
 */
export function packCleanTree(work: string): PackedPackage {
  const clone = join(work, 'clone');
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '' && !file.startsWith('tools/lint/') && !file.startsWith('test/fixtures/apps/'));
  for (const file of files) {
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    try {
      copyFileSync(join(root, file), join(clone, file));
    } catch (error) {
      // A file deleted in the work tree but still tracked is not part of the tree being packed.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: clone,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return { tarball: join(work, packed[0].filename), files: packed[0].files.map((file) => file.path) };
}

/**
 * `packCleanTree` once per test run for every packaging file: the first to ask packs (a build of its own, which takes
 * a busy machine a minute), the others wait for its tarball. Treat the tarball as read-only. Outside a run that set
 * the directory up, packs into `fallback`.
 */
export async function sharedCleanPack(fallback: string): Promise<PackedPackage> {
  const shared = process.env[SHARED_PACK_VARIABLE];
  if (!shared) return packCleanTree(fallback);
  const outcomeFile = join(shared, 'packed.json');
  try {
    // Whoever creates the directory packs; mkdir is atomic across the run's worker processes.
    mkdirSync(join(shared, 'pack'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Hang guard only: the packing file's own set-up fails long before.
    await vi.waitFor(
      () => {
        if (!existsSync(outcomeFile)) throw new Error('the shared npm pack is not written yet');
      },
      { timeout: 600_000, interval: 100 },
    );
    return outcomeOf(outcomeFile);
  }
  let outcome: { packed?: PackedPackage; error?: string };
  try {
    outcome = { packed: packCleanTree(join(shared, 'pack')) };
  } catch (error) {
    outcome = { error: (error as Error).message };
  }
  // Written whole, then renamed: a waiter never reads half a file.
  writeFileSync(`${outcomeFile}.partial`, JSON.stringify(outcome));
  renameSync(`${outcomeFile}.partial`, outcomeFile);
  return outcomeOf(outcomeFile);
}

function outcomeOf(file: string): PackedPackage {
  const outcome = JSON.parse(readFileSync(file, 'utf8')) as { packed?: PackedPackage; error?: string };
  if (!outcome.packed) throw new Error(`npm pack of the clean tree failed: ${outcome.error}`);
  return outcome.packed;
}
