import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Builds dist/ when `builtFile` is missing or older than a source under `sourceDir` (`npm test` builds first
 * anyway), for tests that run the package in other processes. Test files run in parallel workers, so a lock
 * directory makes one of them build while the others wait.
 */
export async function ensureBuilt(builtFile: string, sourceDir = join(root, 'lib')): Promise<void> {
  if (!isStale(builtFile, sourceDir)) return;
  const lock = join(tmpdir(), `platform-auth-build-${createHash('sha1').update(root).digest('hex').slice(0, 12)}.lock`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock left by a killed run is older than any build takes.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 60_000)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${lock}`);
      await sleep(100);
    }
  }
  try {
    if (isStale(builtFile, sourceDir)) {
      execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
        cwd: root,
        stdio: 'pipe',
      });
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function isStale(builtFile: string, sourceDir: string): boolean {
  if (!existsSync(builtFile)) return true;
  const built = statSync(builtFile).mtimeMs;
  return sourceFiles(sourceDir).some((file) => statSync(file).mtimeMs > built);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}
