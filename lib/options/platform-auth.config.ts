import { registerAs } from '@nestjs/config';
import { PLATFORM_AUTH_CONFIG_NAMESPACE, PLATFORM_AUTH_ENV } from './options.constants.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * The options the environment variables of the options table describe. Unset and empty variables are left out,
 * so defaults apply and start-up validation names the variable that is missing.
 */
export function readPlatformAuthEnv(env: Env = process.env): PlatformAuthOptions {
  const options: Record<string, string> = {};
  for (const [option, variable] of Object.entries(PLATFORM_AUTH_ENV)) {
    const value = read(env, variable);
    if (value !== undefined) options[option] = value;
  }
  return options as unknown as PlatformAuthOptions;
}

/**
 * `@nestjs/config` namespace `platformAuth`, filled from the environment. The whole set-up of an app that uses
 * `ConfigModule` is `PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider())`.
 */
export const platformAuthConfig = registerAs(PLATFORM_AUTH_CONFIG_NAMESPACE, (): PlatformAuthOptions =>
  readPlatformAuthEnv(),
);
