import { registerAs } from '@nestjs/config';
import { PLATFORM_AUTH_CONFIG_NAMESPACE } from './options.constants.js';
import { PLATFORM_AUTH_OPTIONS, type OptionRow, type OptionTable } from './options.table.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { integrationEnvName, integrationName } from './integration-name.util.js';
import { ownAt, setAt } from './own-options.util.js';
import { secret } from '../util/secret.util.js';

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * A variable's text as the option's type. Text that is not a value of that type is passed on as it is, so start-up
 * validation refuses it naming the variable, instead of a wrong value slipping through (`'flase'` as true, say).
 */
function parseValue(row: OptionRow, text: string): unknown {
  const trimmed = text.trim();
  const boolean = /^(true|1|yes)$/i.test(trimmed) ? true : /^(false|0|no)$/i.test(trimmed) ? false : text;
  // A group turned on is its defaults: an object, so that its other variables fill it.
  if (row.toggle) return boolean === true ? Object.create(null) : boolean;
  switch (row.kind) {
    case 'number':
      return /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : text;
    case 'boolean':
      return boolean;
    case 'list':
      return trimmed
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    default:
      return text;
  }
}

const STORE_VARIABLE = /^PLATFORM_TOKEN_STORE_/;

/**
 * The variable each row of `table` is read from. A named integration reads its own `PLATFORM_<NAME>_*`, except that
 * the store settings without a name (`PLATFORM_TOKEN_STORE_*`) apply to it when it sets none of its own: a fleet
 * shares one store, and the store keeps integrations apart by their own key names.
 */
function tableVariables(table: OptionTable, env: Env, integration?: string): Map<string, string> {
  const own = (variable: string) => integrationEnvName(variable, integration);
  const rows = Object.entries(table).flatMap(([name, row]) =>
    row.env === undefined ? [] : [[name, row.env] as const],
  );
  const ownStore = rows.some(([, variable]) => STORE_VARIABLE.test(variable) && read(env, own(variable)) !== undefined);
  return new Map(
    rows.map(([name, variable]) => [name, STORE_VARIABLE.test(variable) && !ownStore ? variable : own(variable)]),
  );
}

/**
 * The options the environment variables of `table` describe, in the options' current shape (`PLATFORM_PRIVATE_KEY_PATH`
 * fills `key.privateKeyPath`), each parsed as its row's kind says. Unset and empty variables are left out, so defaults
 * apply and start-up validation names the variable that is missing. For a named integration the variables carry its
 * name: `PLATFORM_BILLING_BASE_URL`, `PLATFORM_BILLING_MACHINE_ID`, …
 */
export function readTableEnv(table: OptionTable, env: Env, integration?: string): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const [name, variable] of tableVariables(table, env, integration)) {
    const text = read(env, variable);
    // A group turned off (`PLATFORM_CALL_RETRY=false`) comes first in the table, so `setAt` leaves its settings out.
    if (text !== undefined) setAt(options, name, parseValue(table[name], text));
  }
  return options;
}

/** The options the environment variables of the options table describe. */
export function readPlatformAuthEnv(env: Env = process.env, integration?: string): PlatformAuthOptions {
  return readTableEnv(PLATFORM_AUTH_OPTIONS, env, integration) as unknown as PlatformAuthOptions;
}

/**
 * ConfigModule keeps a namespace object for the life of the app, so secrets and PEM text are not copied into it.
 * A secret becomes a `Secret` that reads its variable only when the module starts, and reads as `[secret]` through
 * `ConfigService`, `JSON.stringify` and `util.inspect`; other PEM text becomes a getter that reads its variable when
 * used. Spreading the namespace into options still works.
 */
export function namespaceOptions(table: OptionTable, integration?: string): Record<string, unknown> {
  const options = readTableEnv(table, process.env, integration);
  const variables = tableVariables(table, process.env, integration);
  for (const [name, row] of Object.entries(table)) {
    if (row.env === undefined || (row.secret !== true && row.kind !== 'pem')) continue;
    const steps = name.split('.');
    const parent = steps.length === 1 ? options : ownAt(options, steps.slice(0, -1).join('.'));
    const last = steps.at(-1)!;
    if (typeof parent !== 'object' || parent === null || !Object.hasOwn(parent, last)) continue;
    const variable = variables.get(name)!;
    const readVariable = () => read(process.env, variable);
    Object.defineProperty(
      parent,
      last,
      row.secret
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
  registerAs(
    PLATFORM_AUTH_CONFIG_NAMESPACE,
    (): PlatformAuthOptions => namespaceOptions(PLATFORM_AUTH_OPTIONS) as unknown as PlatformAuthOptions,
  ),
  {
    /** The `@nestjs/config` namespace of a named integration, filled from its `PLATFORM_<NAME>_*` variables. */
    forIntegration: (name: string) => {
      const integration = integrationName(name);
      return registerAs(
        `${PLATFORM_AUTH_CONFIG_NAMESPACE}:${integration}`,
        (): PlatformAuthOptions =>
          namespaceOptions(PLATFORM_AUTH_OPTIONS, integration) as unknown as PlatformAuthOptions,
      );
    },
  },
);
