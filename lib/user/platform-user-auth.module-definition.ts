import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

export interface PlatformUserAuthModuleExtras {
  /** Register the module globally, so feature modules inject its services without importing it. */
  isGlobal?: boolean;
}

export const {
  ConfigurableModuleClass: ConfigurablePlatformUserAuthModule,
  MODULE_OPTIONS_TOKEN: PLATFORM_USER_AUTH_MODULE_OPTIONS,
  OPTIONS_TYPE: PLATFORM_USER_AUTH_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: PLATFORM_USER_AUTH_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<PlatformUserAuthOptions>({ moduleName: 'PlatformUserAuth' })
  .setClassMethodName('forRoot')
  .setExtras<PlatformUserAuthModuleExtras>({ isGlobal: false }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();

export type PlatformUserAuthModuleOptions = typeof PLATFORM_USER_AUTH_OPTIONS_TYPE;
export type PlatformUserAuthModuleAsyncOptions = typeof PLATFORM_USER_AUTH_ASYNC_OPTIONS_TYPE;
