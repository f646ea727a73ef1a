import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot, SHARED_PACK_VARIABLE } from './built-package.js';

/**
 * Vitest global set-up: builds the package and the sample app once, from clean output folders, before any test file
 * runs. `npm run build:sample` runs `npm run build` first, so whatever the package build becomes is what is tested.
 * Also makes the run's directory for the one `npm pack` the packaging files share (`sharedCleanPack`): the worker
 * processes inherit its path, and it is removed after the run.
 */
export default function buildOnce(): () => void {
  for (const output of ['dist', 'sample-app/dist']) rmSync(join(packageRoot, output), { recursive: true, force: true });
  execFileSync('npm', ['run', 'build:sample', '--silent'], { cwd: packageRoot, stdio: 'inherit' });
  const packDirectory = mkdtempSync(join(tmpdir(), 'platform-auth-shared-pack-'));
  process.env[SHARED_PACK_VARIABLE] = packDirectory;
  return () => rmSync(packDirectory, { recursive: true, force: true });
}
