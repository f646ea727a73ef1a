import { registerAs } from '@nestjs/config';
import { readEnvOptions } from '../options/platform-auth.config.js';
import { PLATFORM_USER_AUTH_CONFIG_NAMESPACE, PLATFORM_USER_AUTH_ENV } from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

/** The options the `PLATFORM_*` user sign-in variables describe; unset and empty ones are left out. */
export function readPlatformUserAuthEnv(
  env: Record<string, string | undefined> = process.env,
): PlatformUserAuthOptions {
  return readEnvOptions(PLATFORM_USER_AUTH_ENV, env) as unknown as PlatformUserAuthOptions;
}

/**
 * `@nestjs/config` namespace `platformUserAuth`, filled from the environment:
 * `PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider())`.
 */
export const platformUserAuthConfig = registerAs(PLATFORM_USER_AUTH_CONFIG_NAMESPACE, (): PlatformUserAuthOptions =>
  readPlatformUserAuthEnv(),
);
