import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const cliPath = join(root, 'dist/cli/main.js');

export interface CliResult {
  /** Exit code; `null` when the process was killed. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The CLI as users run it: a separate node process with only the environment given here. */
export function runCli(args: readonly string[], env: Record<string, string> = {}, cwd = root): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliPath, ...args],
      { env, cwd, timeout: 15_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export function parseJson<T = Record<string, unknown>>(result: CliResult): T {
  return JSON.parse(result.stdout) as T;
}

/**
 * Builds dist/ when dist/cli/main.js is missing or older than a source of lib/cli (`npm test` builds first anyway).
 * Test files run in parallel workers, so a lock directory makes one of them build while the others wait.
 */
export async function ensureCliBuilt(): Promise<void> {
  if (!cliIsStale()) return;
  const lock = join(
    tmpdir(),
    `platform-auth-cli-build-${createHash('sha1').update(root).digest('hex').slice(0, 12)}.lock`,
  );
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
    if (cliIsStale()) {
      execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
        cwd: root,
        stdio: 'pipe',
      });
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function cliIsStale(): boolean {
  if (!existsSync(cliPath)) return true;
  const built = statSync(cliPath).mtimeMs;
  return sourceFiles(join(root, 'lib/cli')).some((file) => statSync(file).mtimeMs > built);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

export { pemFragments, tempDir } from '../support/credential-variants.js';

/** Three base64url segments, the shape of a JWT: an assertion must not be printed unless asked for. */
export const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/;

export function expectNoSecrets(result: CliResult, secrets: readonly string[]): void {
  const output = result.stdout + result.stderr;
  for (const secret of secrets) expect(output).not.toContain(secret);
  expect(output).not.toMatch(JWT_SHAPE);
}
