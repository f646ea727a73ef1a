import { registerAs } from '@nestjs/config';
import { readEnvOptions } from '../options/platform-auth.config.js';
import { secret } from '../util/secret.util.js';
import {
  PLATFORM_USER_AUTH_CONFIG_NAMESPACE,
  PLATFORM_USER_AUTH_ENV,
  PLATFORM_USER_AUTH_ENV_KINDS,
  USER_PEM_OPTIONS,
  USER_SECRET_OPTIONS,
} from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

/** The options the `PLATFORM_*` user sign-in variables describe; unset and empty ones are left out. */
export function readPlatformUserAuthEnv(
  env: Record<string, string | undefined> = process.env,
): PlatformUserAuthOptions {
  return readEnvOptions(
    PLATFORM_USER_AUTH_ENV,
    env,
    undefined,
    PLATFORM_USER_AUTH_ENV_KINDS,
  ) as unknown as PlatformUserAuthOptions;
}

/**
 * ConfigModule keeps the namespace object for the life of the app, so no secret or PEM text is copied into it: a
 * secret becomes a `Secret` that reads its variable when the module starts (and reads `[secret]` through
 * `ConfigService`, `JSON.stringify` and `util.inspect`), PEM text a getter that reads its variable when used.
 */
function namespaceOptions(): PlatformUserAuthOptions {
  const options = readPlatformUserAuthEnv();
  const read = (variable: string) => () => {
    const value = process.env[variable];
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  for (const option of [...USER_SECRET_OPTIONS, ...USER_PEM_OPTIONS]) {
    if (!Object.hasOwn(options, option)) continue;
    const readVariable = read(PLATFORM_USER_AUTH_ENV[option]);
    Object.defineProperty(
      options,
      option,
      (USER_SECRET_OPTIONS as readonly string[]).includes(option)
        ? { value: secret(readVariable), enumerable: true, configurable: true, writable: true }
        : { get: readVariable, enumerable: true, configurable: true },
    );
  }
  return options;
}

/**
 * `@nestjs/config` namespace `platformUserAuth`, filled from the environment:
 * `PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider())`.
 */
export const platformUserAuthConfig = registerAs(PLATFORM_USER_AUTH_CONFIG_NAMESPACE, (): PlatformUserAuthOptions =>
  namespaceOptions(),
);
