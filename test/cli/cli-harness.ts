import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect, onTestFinished } from 'vitest';
import { runCli as runCliProgram } from '../../lib/cli/cli.program.js';
import { builtCliPath, packageRoot } from '../support/built-package.js';

export const root = packageRoot;

export interface CliResult {
  /** Exit code; `null` when a spawned bin was killed by a signal. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** One line of `doctor --json`'s `checks`. */
export interface DoctorCheck {
  id: string;
  status: 'pass' | 'fail' | 'warn' | 'skip';
  label: string;
  detail: string;
  setting?: string;
  fix?: string;
}

export interface RunningCli {
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout satisfies `ready`; rejects when the command ends before. */
  until(ready: (stdout: string) => boolean): Promise<void>;
  /** Asks a long-running command (`emulator`) to stop with `signal`, and resolves with its result. */
  stop(signal?: 'SIGINT' | 'SIGTERM'): Promise<CliResult>;
  /** A spawned bin only: closes the reading end of its stdout, as `| head -1` does once it has read enough. */
  closeStdout?(): void;
  readonly result: Promise<CliResult>;
}

export interface CliRunOptions {
  /** The working directory the command sees; default the repository root. */
  readonly cwd?: string;
  /** Whether stdout and stderr say they are a terminal (the colour choice depends on it); default no, as a pipe. */
  readonly tty?: boolean;
}

/** Keeps what a command writes, and tells the waiters of `until` after every write. */
function watchedOutput(): {
  readonly stdout: { readonly text: () => string; write(text: string): boolean };
  readonly stderr: { readonly text: () => string; write(text: string): boolean };
  readonly until: (ready: (stdout: string) => boolean, ended: Promise<unknown>) => Promise<void>;
} {
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  return {
    stdout: {
      text: () => stdout,
      write(text) {
        stdout += text;
        for (const waiter of waiters) waiter();
        return true;
      },
    },
    stderr: {
      text: () => stderr,
      write(text) {
        stderr += text;
        return true;
      },
    },
    until: (ready, ended) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!ready(stdout)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
        void ended.then(
          () => reject(new Error(`the command ended before it was ready:\n${stdout}\n${stderr}`)),
          (error: unknown) => reject(error instanceof Error ? error : new Error(String(error))),
        );
      }),
  };
}

/**
 * The CLI in this process, through `runCli(argv, io)` as the bin calls it: only the environment given here, the
 * working directory given here, stdout and stderr captured. A long-running command runs until `stop()`.
 */
export function startCli(
  args: readonly string[],
  env: Record<string, string> = {},
  { cwd = root, tty = false }: CliRunOptions = {},
): RunningCli {
  const output = watchedOutput();
  let stopWith!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (stopWith = resolve));
  const result = runCliProgram(args, {
    stdout: { isTTY: tty, write: output.stdout.write },
    stderr: { isTTY: tty, write: output.stderr.write },
    env,
    cwd,
    untilStopped: () => stopped,
  }).then((code) => ({ code, stdout: output.stdout.text(), stderr: output.stderr.text() }));
  return {
    stdout: output.stdout.text,
    stderr: output.stderr.text,
    until: (ready) => output.until(ready, result),
    stop(signal = 'SIGTERM') {
      stopWith(signal);
      return result;
    },
    result,
  };
}

/** `startCli` for a command that ends by itself. */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  options: CliRunOptions = {},
): Promise<CliResult> {
  return startCli(args, env, options).result;
}

/**
 * The built bin in a process of its own, started as the kernel starts it: the interpreter of its `#!` line with that
 * line's argument, then the script. Only for the few smoke tests of what `runCli` cannot show (the real process, its
 * signals, its file modes, Node's own option parsing); killed when the test ends, unless `shared` (one process a
 * whole file uses, started in `beforeAll`): the file's `afterAll` stops that one, or the worker's exit kills it.
 */
export function startBin(
  args: readonly string[],
  {
    cwd = root,
    env = {},
    shared = false,
  }: { cwd?: string; env?: Readonly<Record<string, string>>; shared?: boolean } = {},
): RunningCli {
  const [interpreter, interpreterArgument] = readFileSync(builtCliPath, 'utf8')
    .split('\n', 1)[0]
    .slice('#!'.length)
    .split(/ (.*)/, 2);
  const child = spawn(interpreter, [...(interpreterArgument ? [interpreterArgument] : []), builtCliPath, ...args], {
    cwd,
    // PATH, so that `env` finds node, and the case's variables: nothing else of the test's environment may change
    // what the CLI does.
    env: { ...env, PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  if (shared) process.once('exit', kill);
  else onTestFinished(kill);
  const output = watchedOutput();
  child.stdout.setEncoding('utf8').on('data', output.stdout.write);
  child.stderr.setEncoding('utf8').on('data', output.stderr.write);
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: output.stdout.text(), stderr: output.stderr.text() }));
  });
  return {
    stdout: output.stdout.text,
    stderr: output.stderr.text,
    until: (ready) => output.until(ready, result),
    stop(signal = 'SIGTERM') {
      child.kill(signal);
      return result;
    },
    closeStdout: () => child.stdout.destroy(),
    result,
  };
}

export function parseJson<T = Record<string, unknown>>(result: CliResult): T {
  return JSON.parse(result.stdout) as T;
}

/** The one JSON document a `--json` run of a long-running command prints, once it is complete. */
export async function untilJson<T>(cli: RunningCli): Promise<T> {
  let report: T | undefined;
  await cli.until((stdout) => {
    try {
      report = JSON.parse(stdout) as T;
      return true;
    } catch {
      return false;
    }
  });
  return report!;
}

export { pemFragments, tempDir } from '../support/credential-variants.js';

/** Three base64url segments, the shape of a JWT: an assertion must not be printed unless asked for. */
export const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/;

export function expectNoSecrets(result: CliResult, secrets: readonly string[]): void {
  const output = result.stdout + result.stderr;
  for (const secret of secrets) expect(output).not.toContain(secret);
  expect(output).not.toMatch(JWT_SHAPE);
}
