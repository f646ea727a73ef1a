import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
