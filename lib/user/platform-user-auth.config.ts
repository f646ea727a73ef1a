import { registerAs } from '@nestjs/config';
import { namespaceOptions } from '../options/platform-auth.config.js';
import { PLATFORM_USER_AUTH_OPTIONS } from '../options/options.table.user.js';
import { PLATFORM_USER_AUTH_CONFIG_NAMESPACE } from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

/**
 * `@nestjs/config` namespace `platformUserAuth`, filled from the environment:
 * `PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider())`. As machine authentication's, it holds
 * no secret or PEM text: a secret reads its variable when the module starts, PEM text when used.
 */
export const platformUserAuthConfig = registerAs(
  PLATFORM_USER_AUTH_CONFIG_NAMESPACE,
  (): PlatformUserAuthOptions => namespaceOptions(PLATFORM_USER_AUTH_OPTIONS) as unknown as PlatformUserAuthOptions,
);
