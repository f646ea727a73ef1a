import type { ConfigurableModuleAsyncOptions } from '@nestjs/common';
import { configurableModule } from '../platform-auth.module-helpers.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

export interface PlatformUserAuthModuleExtras {
  /** Register the module globally, so feature modules inject its services without importing it. */
  isGlobal?: boolean;
}

export const {
  ConfigurableModuleClass: ConfigurablePlatformUserAuthModule,
  MODULE_OPTIONS_TOKEN: PLATFORM_USER_AUTH_MODULE_OPTIONS,
} = configurableModule<PlatformUserAuthOptions, PlatformUserAuthModuleExtras>('PlatformUserAuth');

/** What `forRoot` takes: the options, and the module's extras. */
export type PlatformUserAuthModuleOptions = PlatformUserAuthOptions & Partial<PlatformUserAuthModuleExtras>;
/** What `forRootAsync` takes: `useFactory` / `useClass` / `useExisting` for the options, and the module's extras. */
export type PlatformUserAuthModuleAsyncOptions = ConfigurableModuleAsyncOptions<PlatformUserAuthOptions, 'create'> &
  Partial<PlatformUserAuthModuleExtras>;
