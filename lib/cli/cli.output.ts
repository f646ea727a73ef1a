import type { CheckResult, CheckStatus, Env } from './cli.command.js';

/** The part of a stream the output needs: a TTY check decides about colour. */
export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

interface Style {
  ok(text: string): string;
  fail(text: string): string;
  warn(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/**
 * Where a command writes. Results go to stdout (one JSON document in `--json` mode, text otherwise); notes and
 * errors go to stderr, so `--json` output and `--raw` values stay pipeable.
 */
export interface Output {
  readonly json: boolean;
  readonly style: Style;
  print(text?: string): void;
  printJson(value: unknown): void;
  /** A remark for the person at the terminal, on stderr. */
  note(text: string): void;
  /** An error for the person at the terminal, on stderr. */
  error(text: string): void;
}

/**
 * `stream` for a reader that may go away before the command is done (`platform-auth emulator fault … | head -1`):
 * once a write fails with EPIPE, what is still written is dropped, and the command finishes its work and exits with
 * its own code. A reader that has read enough is no failure; before, Node threw the EPIPE as an unhandled error and
 * the process exited 1 after the work was done.
 */
export function toReaderThatMayLeave(stream: NodeJS.WriteStream): OutputStream {
  let readerLeft = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    readerLeft = true;
  });
  return {
    isTTY: stream.isTTY,
    write: (text) => readerLeft || stream.write(text),
  };
}

const ANSI: Record<keyof Style, [open: number, close: number]> = {
  ok: [32, 39],
  fail: [31, 39],
  warn: [33, 39],
  dim: [2, 22],
  bold: [1, 22],
};

/** Colour only for a person at a terminal: never into pipes or files, and never against NO_COLOR (no-color.org). */
function colourEnabled(stream: OutputStream, env: Env): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

function createStyle(enabled: boolean): Style {
  const paint =
    ([open, close]: [number, number]) =>
    (text: string) =>
      enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    ok: paint(ANSI.ok),
    fail: paint(ANSI.fail),
    warn: paint(ANSI.warn),
    dim: paint(ANSI.dim),
    bold: paint(ANSI.bold),
  };
}

export function createOutput(stdout: OutputStream, stderr: OutputStream, env: Env, json: boolean): Output {
  const stderrStyle = createStyle(colourEnabled(stderr, env));
  return {
    json,
    style: createStyle(colourEnabled(stdout, env)),
    print: (text = '') => void stdout.write(`${text}\n`),
    printJson: (value) => void stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    note: (text) => void stderr.write(`${stderrStyle.dim(text)}\n`),
    error: (text) => void stderr.write(`${stderrStyle.fail('platform-auth:')} ${text}\n`),
  };
}

const SYMBOLS: Record<CheckStatus, string> = { pass: '✓', fail: '✗', warn: '!', skip: '–' };

function statusSymbol(status: CheckStatus, style: Style): string {
  const symbol = SYMBOLS[status];
  switch (status) {
    case 'pass':
      return style.ok(symbol);
    case 'fail':
      return style.fail(symbol);
    case 'warn':
      return style.warn(symbol);
    default:
      return style.dim(symbol);
  }
}

/** One line per check, labels aligned; a fix goes on its own line under the detail. */
export function printChecks(out: Output, checks: readonly CheckResult[]): void {
  const width = Math.max(0, ...checks.map((check) => check.label.length));
  const indent = ' '.repeat(width + 4);
  for (const check of checks) {
    const detail = check.status === 'skip' ? out.style.dim(check.detail) : check.detail;
    out.print(`${statusSymbol(check.status, out.style)} ${check.label.padEnd(width)}  ${detail}`);
    if (check.fix && (check.status === 'fail' || check.status === 'warn'))
      out.print(`${indent}${out.style.dim(`fix: ${check.fix}`)}`);
  }
}

interface CheckCounts {
  passed: number;
  failed: number;
  warnings: number;
  skipped: number;
}

export function countChecks(checks: readonly CheckResult[]): CheckCounts {
  const count = (status: CheckStatus) => checks.filter((check) => check.status === status).length;
  return { passed: count('pass'), failed: count('fail'), warnings: count('warn'), skipped: count('skip') };
}

export function summaryLine(counts: CheckCounts, style: Style): string {
  const parts = [
    style.ok(`${counts.passed} passed`),
    counts.failed > 0 ? style.fail(`${counts.failed} failed`) : `${counts.failed} failed`,
    counts.warnings > 0 ? style.warn(plural(counts.warnings, 'warning')) : plural(counts.warnings, 'warning'),
  ];
  if (counts.skipped > 0) parts.push(style.dim(`${counts.skipped} not checked`));
  return parts.join(', ');
}

/** `key  value` rows with the values aligned. */
export function printFields(out: Output, rows: ReadonlyArray<readonly [string, string]>, indent = ''): void {
  const width = Math.max(0, ...rows.map(([key]) => key.length));
  for (const [key, value] of rows) out.print(`${indent}${key.padEnd(width)}  ${value}`);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Seconds with their sign, the way clock offsets read best: `+3 s`, `-42 s`. */
export function signedSeconds(seconds: number): string {
  return `${seconds > 0 ? '+' : seconds < 0 ? '-' : '±'}${Math.abs(seconds)} s`;
}
