import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { readOptions, type ReadPlatformAuthOptions } from '../options/options.read.js';
import { ConfigReport } from '../options/config.report.js';
import { readPlatformAuthEnv } from '../options/platform-auth.config.js';
import { DEFAULT_INTEGRATION, integrationName } from '../options/integration-name.util.js';
import { PlatformAuthConfigError, type ConfigProblem } from '../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../platform-auth.configuration.js';
import { loadIntegration } from '../platform-auth.builder.js';
import {
  CommandFailure,
  UsageError,
  describeFsError,
  flag,
  stringOption,
  type CheckResult,
  type CommandContext,
  type Env,
  type OptionSpec,
} from './cli.command.js';
import { printChecks, type Output } from './cli.output.js';

/** Read when present and no --env-file is given, as ConfigModule.forRoot() does by default. */
const DEFAULT_ENV_FILE = '.env';

export const ENV_FILE_OPTION: Readonly<Record<string, OptionSpec>> = {
  'env-file': {
    type: 'string',
    placeholder: 'FILE',
    description:
      'read the PLATFORM_* variables from this .env file (default: ./.env when it exists, as ConfigModule does); variables already set in the environment win',
  },
  'no-env-file': {
    type: 'boolean',
    description: 'read the environment only, not ./.env',
  },
  integration: {
    type: 'string',
    placeholder: 'NAME',
    description:
      "a named integration: read PLATFORM_<NAME>_* (PLATFORM_BILLING_BASE_URL, …), as platformAuthConfig.forIntegration('name') does",
  },
};

/**
 * The environment the module would see: the process's, plus `--env-file`, or `./.env` when it exists (ConfigModule's
 * default), which is said on stderr so that nobody wonders where a value came from.
 */
export function configurationEnv(context: CommandContext): Env {
  const given = stringOption(context, 'env-file');
  if (given !== undefined && flag(context, 'no-env-file'))
    throw new UsageError('--env-file and --no-env-file exclude each other');
  if (flag(context, 'no-env-file')) return context.env;
  const path = resolve(context.cwd, given ?? DEFAULT_ENV_FILE);
  if (given === undefined && !existsSync(path)) return context.env;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CommandFailure(
      `cannot read ${given === undefined ? '' : '--env-file '}'${path}': ${describeFsError(error)}`,
    );
  }
  const fromFile = parseEnv(text);
  const applied = Object.keys(fromFile).filter((name) => context.env[name] === undefined);
  context.out.note(
    `Read ${applied.length} variable${applied.length === 1 ? '' : 's'} from ${path}${given === undefined ? ' (the default, as ConfigModule; --no-env-file to skip)' : ''}; variables already set in the environment win.`,
  );
  return { ...fromFile, ...context.env };
}

/** `--integration NAME`, checked as the module checks `forRoot({ name })`. */
function integrationOption(context: CommandContext): string | undefined {
  const name = stringOption(context, 'integration');
  if (name === undefined) return undefined;
  try {
    return integrationName(name);
  } catch (error) {
    if (error instanceof PlatformAuthConfigError) throw new UsageError(`--integration ${error.problems[0].message}`);
    throw error;
  }
}

type Configuration =
  | {
      readonly options: ReadPlatformAuthOptions;
      readonly config: ResolvedPlatformAuthConfig;
      readonly problems?: undefined;
      /** The variables the configuration was read from (the environment and the .env file). */
      readonly env: Env;
    }
  | {
      readonly options: ReadPlatformAuthOptions;
      readonly config?: undefined;
      readonly problems: readonly ConfigProblem[];
      readonly env: Env;
    };

/**
 * Reads the variables and validates them exactly as the module does at start-up (`readPlatformAuthEnv`, then
 * `loadIntegration`), so the command line and an application can never disagree about a configuration. A
 * resolved configuration holds an open key (a PKCS#11 token's sessions): the runtime built from it closes it at
 * shutdown; a command that builds none closes `config.credentials.key` itself.
 */
export async function resolveConfiguration(context: CommandContext, nowMs: number): Promise<Configuration> {
  const integration = integrationOption(context);
  const env = { ...configurationEnv(context) };
  const fromEnv = readPlatformAuthEnv(env, integration);
  // The commands read single settings (which key source, which certificate file), with the text of every `Secret`.
  const options = readOptions(fromEnv, new ConfigReport(integration));
  try {
    const owner = { integration: integration ?? DEFAULT_INTEGRATION, env };
    return { options, config: await loadIntegration({ options: fromEnv, owner, nowMs }), env };
  } catch (error) {
    if (error instanceof PlatformAuthConfigError) return { options, problems: error.problems, env };
    throw error;
  }
}

function configurationChecks(findings: readonly ConfigProblem[], status: CheckResult['status']): CheckResult[] {
  return findings.map((finding) => ({
    id: 'configuration',
    status,
    label: 'Configuration',
    detail: `${finding.setting}: ${finding.message}`,
    setting: finding.setting,
  }));
}

/**
 * For the commands that need a working configuration: the resolved one, or `undefined` after reporting what is
 * wrong (as JSON with `--json`).
 */
export async function requireConfiguration(
  context: CommandContext,
): Promise<Extract<Configuration, { config: ResolvedPlatformAuthConfig }> | undefined> {
  const configuration = await resolveConfiguration(context, context.now());
  if (configuration.config) return configuration;
  if (context.out.json) context.out.printJson({ ok: false, problems: configuration.problems });
  else printConfigurationProblems(context.out, configuration.problems);
  return undefined;
}

/** For the commands that need a working configuration: what is wrong, and where to look next. */
function printConfigurationProblems(out: Output, problems: readonly ConfigProblem[]): void {
  printChecks(out, configurationChecks(problems, 'fail'));
  out.print();
  out.print(
    `The configuration has ${problems.length === 1 ? '1 problem' : `${problems.length} problems`}; 'platform-auth doctor' checks every part with its fix.`,
  );
}

export function warningChecks(warnings: readonly ConfigProblem[]): CheckResult[] {
  return configurationChecks(warnings, 'warn');
}
