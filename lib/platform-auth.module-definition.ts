import type { ConfigurableModuleAsyncOptions } from '@nestjs/common';
import { configurableModule } from './platform-auth.module-helpers.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';

/**
 * What `forRootAsync` takes: `useFactory` / `useClass` / `useExisting` for the options, and the module's extras,
 * which `forRoot` takes beside the options.
 */
export type PlatformAuthModuleAsyncOptions = ConfigurableModuleAsyncOptions<PlatformAuthOptions, 'create'> & {
  /** Register the module globally, so feature modules inject its services without importing it. */
  isGlobal?: boolean;
  /**
   * Registers a named integration beside the default one, with its own credentials, token, agents and interceptor.
   * Inject its services with `@InjectPlatformHttpService(name)`, `@InjectTokenProvider(name)`,
   * `@InjectAssertionSigner(name)`. Lower-case letters, digits, `-` and `_`.
   */
  name?: string;
};

export const {
  ConfigurableModuleClass: ConfigurablePlatformAuthModule,
  MODULE_OPTIONS_TOKEN: PLATFORM_AUTH_MODULE_OPTIONS,
} = configurableModule<PlatformAuthOptions, Pick<PlatformAuthModuleAsyncOptions, 'isGlobal' | 'name'>>('PlatformAuth');
