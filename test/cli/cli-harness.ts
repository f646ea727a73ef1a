import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { ensureBuilt } from '../support/built-package.js';

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

/** Builds dist/ when the CLI's build is missing or older than a source of lib/cli (`npm test` builds first anyway). */
export function ensureCliBuilt(): Promise<void> {
  return ensureBuilt(cliPath, join(root, 'lib/cli'));
}

export { pemFragments, tempDir } from '../support/credential-variants.js';

/** Three base64url segments, the shape of a JWT: an assertion must not be printed unless asked for. */
export const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/;

export function expectNoSecrets(result: CliResult, secrets: readonly string[]): void {
  const output = result.stdout + result.stderr;
  for (const secret of secrets) expect(output).not.toContain(secret);
  expect(output).not.toMatch(JWT_SHAPE);
}
