import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './built-package.js';

/**
 * Vitest global set-up: builds the package and the sample app once, from clean output folders, before any test file
 * runs. `npm run build:sample` runs `npm run build` first, so whatever the package build becomes is what is tested.
 */
export default function buildOnce(): void {
  for (const output of ['dist', 'sample-app/dist']) rmSync(join(packageRoot, output), { recursive: true, force: true });
  execFileSync('npm', ['run', 'build:sample', '--silent'], { cwd: packageRoot, stdio: 'inherit' });
}
