import { PLATFORM_AUTH_ENV } from './options.table.js';
import { PlatformAuthConfigError, type ConfigProblem } from '../platform-auth.errors.js';
import { integrationEnvName } from './integration-name.util.js';
import { switchedOffWarnings, unknownVariableWarnings, withNearMisses } from './env-variables.js';

/**
 * Names a setting the way a user finds it: the option, and the environment variable that fills it (for a named
 * integration, its own variable: `PLATFORM_BILLING_BASE_URL`).
 */
export function settingName(
  option: string,
  integration?: string,
  variables: Readonly<Record<string, string>> = PLATFORM_AUTH_ENV,
): string {
  const env = variables[option];
  return env ? `${option} (${integrationEnvName(env, integration)})` : option;
}

/**
 * A user-supplied value fit to quote in a message, or `undefined` when it must not be: PEM text pasted into the
 * wrong variable (a key in `*_PATH`, say) would otherwise be printed at start-up.
 */
export function quotable(value: string): string | undefined {
  return value.length > 256 || /-----BEGIN|[\r\n]|\\n/.test(value) ? undefined : value;
}

/** `value` without its `undefined` fields, so spreading it over defaults keeps the defaults. */
export function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Whose settings a report names, and so how: `integration`, a named integration, whose variables are
 * `PLATFORM_<NAME>_…`; `variables`, the environment variable of each option (default machine authentication's).
 */
export interface SettingNames {
  readonly integration?: string;
  readonly variables?: Readonly<Record<string, string>>;
}

/**
 * Settings that come from code alone and are named by option only: a tenant's (its resolver gives them, no
 * variable does) and a rotation's input.
 */
export const BY_OPTION: SettingNames = { variables: {} };

/** Collects every start-up problem and warning so they can be reported at once. */
export class ConfigReport {
  readonly problems: ConfigProblem[] = [];
  readonly warnings: ConfigProblem[] = [];
  /**
   * `integration`: the name of a named integration, so settings and the error name it. `variables`: the
   * environment variable of each option (default machine authentication's), for the names in messages.
   */
  constructor(
    private readonly integration?: string,
    private readonly variables: Readonly<Record<string, string>> = PLATFORM_AUTH_ENV,
  ) {}

  /** A report that names settings as `names` says. */
  static naming(names: SettingNames): ConfigReport {
    return new ConfigReport(names.integration, names.variables);
  }

  /** How this report names settings, for a report made later about the same settings (a file reload's). */
  get names(): SettingNames {
    return { integration: this.integration, variables: this.variables };
  }

  /** How `option` is named in this report's messages: the option and its variable (see `settingName`). */
  name(option: string): string {
    return settingName(option, this.integration, this.variables);
  }

  problem(option: string, message: string): void {
    this.problems.push(this.entry(option, message));
  }

  warn(option: string, message: string): void {
    this.warnings.push(this.entry(option, message));
  }

  private entry(option: string, message: string): ConfigProblem {
    return { option, setting: settingName(option, this.integration, this.variables), message };
  }

  /**
   * What the environment says about typos: a warning per `PLATFORM_*` variable the package does not read or that a
   * `false` beside it leaves unread, and a required setting's problem naming the near-miss that is set. Call it once every problem is in.
   */
  checkVariables(env: Readonly<Record<string, string | undefined>>): void {
    this.warnings.push(...unknownVariableWarnings(env));
    // The switches are machine authentication's: user sign-in's report does not repeat their warnings.
    if (this.variables === PLATFORM_AUTH_ENV) this.warnings.push(...switchedOffWarnings(env, this.integration));
    this.problems.splice(0, this.problems.length, ...withNearMisses(this.problems, env));
  }

  throwIfProblems(): void {
    if (this.problems.length > 0) throw new PlatformAuthConfigError(this.problems, this.integration);
  }
}
