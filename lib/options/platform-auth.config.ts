import { registerAs } from '@nestjs/config';
import { NUMERIC_ENV_OPTIONS, PLATFORM_AUTH_CONFIG_NAMESPACE, PLATFORM_AUTH_ENV } from './options.constants.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { integrationEnvName, integrationName } from './integration-name.util.js';

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * The options that `variables` (option name → environment variable) describe. Unset and empty variables are left
 * out, so defaults apply and start-up validation names the variable that is missing. For a named integration the
 * variables carry its name: `PLATFORM_BILLING_BASE_URL`, `PLATFORM_BILLING_MACHINE_ID`, …
 */
export function readEnvOptions(
  variables: Readonly<Record<string, string>>,
  env: Env,
  integration?: string,
): Record<string, string> {
  const options: Record<string, string> = {};
  for (const [option, variable] of Object.entries(variables)) {
    const value = read(env, integrationEnvName(variable, integration));
    if (value !== undefined) options[option] = value;
  }
  return options;
}

/** The options the environment variables of the options table describe. */
export function readPlatformAuthEnv(env: Env = process.env, integration?: string): PlatformAuthOptions {
  const options: Record<string, string | number> = readEnvOptions(PLATFORM_AUTH_ENV, env, integration);
  // A number that does not parse stays NaN, which start-up validation reports under the variable's name.
  for (const option of NUMERIC_ENV_OPTIONS) {
    const value = options[option];
    if (typeof value === 'string') options[option] = Number(value.trim());
  }
  return options as unknown as PlatformAuthOptions;
}

/** The `@nestjs/config` namespace of a named integration, filled from its `PLATFORM_<NAME>_*` variables. */
function forIntegration(name: string) {
  const integration = integrationName(name);
  return registerAs(`${PLATFORM_AUTH_CONFIG_NAMESPACE}:${integration}`, (): PlatformAuthOptions =>
    readPlatformAuthEnv(process.env, integration),
  );
}

/**
 * `@nestjs/config` namespace `platformAuth`, filled from the environment. The whole set-up of an app that uses
 * `ConfigModule` is `PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider())`; a named integration beside
 * it is `PlatformAuthModule.forRootAsync({ name: 'billing', ...platformAuthConfig.forIntegration('billing').asProvider() })`.
 */
export const platformAuthConfig = Object.assign(
  registerAs(PLATFORM_AUTH_CONFIG_NAMESPACE, (): PlatformAuthOptions => readPlatformAuthEnv()),
  { forIntegration },
);
