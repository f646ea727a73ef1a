import type { Output } from './cli.output.js';

export type Env = Readonly<Record<string, string | undefined>>;

export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip';

/** One verdict, printed as one line (`✓ label detail`) and emitted as-is in `--json`. */
export interface CheckResult {
  readonly id: string;
  readonly status: CheckStatus;
  readonly label: string;
  readonly detail: string;
  /** The option and environment variable at fault, for configuration problems. */
  readonly setting?: string;
  readonly fix?: string;
}

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** Shown in help: `--out DIR`. */
  readonly placeholder?: string;
  readonly description: string;
  /** A string option that may be given more than once; its values come in order (see {@link stringOptions}). */
  readonly multiple?: boolean;
}

export interface CommandContext {
  readonly options: Readonly<Record<string, string | boolean | readonly (string | boolean)[] | undefined>>;
  readonly positionals: readonly string[];
  readonly out: Output;
  readonly env: Env;
  readonly cwd: string;
  readonly now: () => number;
  /** Resolves with the signal's name once the process is asked to stop (SIGINT, SIGTERM). */
  readonly untilStopped: () => Promise<string>;
}

export interface Command {
  readonly name: string;
  /** Arguments after the command name, for the usage line. */
  readonly synopsis: string;
  readonly description: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Names of the required positional arguments, in order. */
  readonly positionals?: readonly string[];
  /** Commands under this one (`emulator upload`), chosen by the first argument; loaded on demand. */
  readonly subcommands?: Readonly<Record<string, () => Promise<Command>>>;
  /** Exit code: 0 success, 1 a check or operation failed. */
  run(context: CommandContext): Promise<number>;
}

/** The command line itself is wrong (exit code 2): unknown command or option, missing or malformed argument. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The command could not do its job for a reason the user can fix (exit code 1); the message says which. */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandFailure';
  }
}

export function stringOption(context: CommandContext, name: string): string | undefined {
  const value = context.options[name];
  return typeof value === 'string' ? value : undefined;
}

/** Every value of a repeatable option, in the order given. */
export function stringOptions(context: CommandContext, name: string): readonly string[] {
  const value = context.options[name];
  const values = Array.isArray(value) ? value : [value];
  return values.filter((each): each is string => typeof each === 'string');
}

export function flag(context: CommandContext, name: string): boolean {
  return context.options[name] === true;
}

/** A whole number within bounds, or a usage error naming the option and the accepted range. */
export function integerOption(
  context: CommandContext,
  name: string,
  range: { min: number; max: number; fallback: number },
): number {
  const raw = stringOption(context, name);
  if (raw === undefined) return range.fallback;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < range.min || value > range.max) {
    throw new UsageError(`--${name} must be a whole number from ${range.min} to ${range.max}, got '${raw}'`);
  }
  return value;
}

export { describeFsError } from '../credentials/fs-error.util.js';
