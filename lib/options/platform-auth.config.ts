import { registerAs } from '@nestjs/config';
import { PLATFORM_AUTH_CONFIG_NAMESPACE } from './options.constants.js';
import {
  FORGOTTEN_AFTER_STARTUP,
  PLATFORM_AUTH_ENV,
  PLATFORM_AUTH_OPTIONS,
  type OptionName,
  type OptionRow,
} from './options.table.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { integrationEnvName, integrationName } from './integration-name.util.js';
import { secret } from '../util/secret.util.js';

type Env = Record<string, string | undefined>;

/** How a variable's text becomes an option value; the ones not listed are taken as text. */
export type EnvValueKind = 'number' | 'boolean' | 'list';

/** From the option table: the variables whose text is parsed as a number, a boolean or a list. */
const ENV_KINDS: Readonly<Record<string, EnvValueKind | undefined>> = Object.fromEntries(
  Object.keys(PLATFORM_AUTH_ENV).map((name) => {
    const { kind } = PLATFORM_AUTH_OPTIONS[name as OptionName] as OptionRow;
    return [name, kind === 'number' || kind === 'boolean' || kind === 'list' ? kind : undefined];
  }),
);

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * A variable's text as the option's type. Text that is not a value of that type is passed on as it is, so start-up
 * validation refuses it naming the variable, instead of a wrong value slipping through (`'flase'` as true, say).
 */
function parseValue(kind: EnvValueKind | undefined, text: string): unknown {
  const trimmed = text.trim();
  switch (kind) {
    case 'number':
      return /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : text;
    case 'boolean':
      return /^(true|1|yes)$/i.test(trimmed) ? true : /^(false|0|no)$/i.test(trimmed) ? false : text;
    case 'list':
      return trimmed
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    default:
      return text;
  }
}

/**
 * The options that `variables` (option name → environment variable) describe, each parsed as `kinds` says (text
 * otherwise); `retry.maxTotalMs` fills a nested option. Unset and empty variables are left out, so defaults apply and
 * start-up validation names the variable that is missing. For a named integration the variables carry its name:
 * `PLATFORM_BILLING_BASE_URL`, `PLATFORM_BILLING_MACHINE_ID`, …
 */
export function readEnvOptions(
  variables: Readonly<Record<string, string>>,
  env: Env,
  integration?: string,
  kinds: Readonly<Record<string, EnvValueKind | undefined>> = {},
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const [option, variable] of Object.entries(variables)) {
    const text = read(env, integrationEnvName(variable, integration));
    if (text === undefined) continue;
    const value = parseValue(kinds[option], text);
    const [parent, child] = option.split('.');
    if (child === undefined) options[parent] = value;
    else options[parent] = { ...(options[parent] as object | undefined), [child]: value };
  }
  return options;
}

/** The options the environment variables of the options table describe. */
export function readPlatformAuthEnv(env: Env = process.env, integration?: string): PlatformAuthOptions {
  return readEnvOptions(PLATFORM_AUTH_ENV, env, integration, ENV_KINDS) as unknown as PlatformAuthOptions;
}

/**
 * ConfigModule keeps a namespace object for the life of the app, so secrets and PEM text are not copied into it.
 * A secret becomes a `Secret` that reads its variable only when the module starts, and reads as `[secret]` through
 * `ConfigService`, `JSON.stringify` and `util.inspect`; other PEM text becomes a getter that reads its variable when
 * used. Spreading the namespace into options still works.
 */
function namespaceOptions(integration?: string): PlatformAuthOptions {
  const options = readPlatformAuthEnv(process.env, integration);
  for (const option of FORGOTTEN_AFTER_STARTUP) {
    if (!Object.hasOwn(options, option)) continue;
    const variable = integrationEnvName(PLATFORM_AUTH_ENV[option], integration);
    const readVariable = () => read(process.env, variable);
    Object.defineProperty(
      options,
      option,
      (PLATFORM_AUTH_OPTIONS[option] as OptionRow).secret
        ? { value: secret(readVariable), enumerable: true, configurable: true, writable: true }
        : { get: readVariable, enumerable: true, configurable: true },
    );
  }
  return options;
}

/**
 * `@nestjs/config` namespace `platformAuth`, filled from the environment. The whole set-up of an app that uses
 * `ConfigModule` is `PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider())`; a named integration beside
 * it is `PlatformAuthModule.forRootAsync({ name: 'billing', ...platformAuthConfig.forIntegration('billing').asProvider() })`.
 */
export const platformAuthConfig = Object.assign(
  registerAs(PLATFORM_AUTH_CONFIG_NAMESPACE, (): PlatformAuthOptions => namespaceOptions()),
  {
    /** The `@nestjs/config` namespace of a named integration, filled from its `PLATFORM_<NAME>_*` variables. */
    forIntegration: (name: string) => {
      const integration = integrationName(name);
      return registerAs(`${PLATFORM_AUTH_CONFIG_NAMESPACE}:${integration}`, (): PlatformAuthOptions =>
        namespaceOptions(integration),
      );
    },
  },
);
