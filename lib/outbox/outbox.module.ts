import { Module, type ConfigurableModuleAsyncOptions, type DynamicModule, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { PlatformFetch } from '../http/clients/platform-fetch.js';
import { PLATFORM_OUTBOX } from '../platform-auth.constants.js';
import { getPlatformFetchToken } from '../platform-auth.integrations.js';
import { configurableModule } from '../platform-auth.module-helpers.js';
import type { PlatformTenants } from '../tenants/platform-tenants.js';
import { PLATFORM_TENANTS } from '../tenants/tenants.module.js';
import { sealConnection } from './outbox.connection.js';
import type { SendFetch } from './outbox.delivery.js';
import { withOutboxEnvironment } from './outbox.environment.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { resolveOutboxSettings } from './outbox.settings.js';
import type { PlatformOutboxOptions, StoredMessage } from './outbox.types.js';
import { PlatformOutbox } from './platform-outbox.js';

export interface PlatformOutboxModuleExtras {
  /** Register the module globally, so feature modules inject `PlatformOutbox` without importing it. */
  isGlobal?: boolean;
}

const { ConfigurableModuleClass: ConfigurablePlatformOutboxModule, MODULE_OPTIONS_TOKEN: PLATFORM_OUTBOX_OPTIONS } =
  configurableModule<PlatformOutboxOptions, PlatformOutboxModuleExtras>('PlatformOutbox');

/** What `forRoot` takes: the options, and `isGlobal`. */
export type PlatformOutboxModuleOptions = PlatformOutboxOptions & Partial<PlatformOutboxModuleExtras>;
/** What `forRootAsync` takes: `useFactory` / `useClass` / `useExisting` for the options, and `isGlobal`. */
export type PlatformOutboxModuleAsyncOptions = ConfigurableModuleAsyncOptions<PlatformOutboxOptions, 'create'> &
  Partial<PlatformOutboxModuleExtras>;

/**
 * Looks up, at each send, the client of the message's integration or tenant in the application: the integration's
 * module may be imported anywhere, and a tenant is built (or found resident) by the registry.
 */
function fetchResolver(moduleRef: ModuleRef): (message: StoredMessage) => Promise<SendFetch> {
  return async ({ integration, tenant }) => {
    if (tenant !== undefined) {
      let tenants: PlatformTenants;
      try {
        tenants = moduleRef.get<PlatformTenants>(PLATFORM_TENANTS, { strict: false });
      } catch {
        throw new PlatformOutboxError(
          'not_found',
          'no tenant registry in this application (PlatformAuthModule.forTenants)',
        );
      }
      return (await tenants.get(tenant)).fetch.fetch;
    }
    try {
      return moduleRef.get<PlatformFetch>(getPlatformFetchToken(integration), { strict: false }).fetch;
    } catch {
      const which = integration === undefined ? 'the default integration' : `the integration '${integration}'`;
      throw new PlatformOutboxError('not_found', `${which} is not registered in this application (PlatformAuthModule)`);
    }
  };
}

const PROVIDERS: Provider[] = [
  {
    provide: PlatformOutbox,
    useFactory: (options: PlatformOutboxOptions, moduleRef: ModuleRef) =>
      new PlatformOutbox(resolveOutboxSettings(withOutboxEnvironment(options, process.env)), fetchResolver(moduleRef)),
    inject: [PLATFORM_OUTBOX_OPTIONS, ModuleRef],
  },
  // Under a token both builds share, so the health indicator of either finds it.
  { provide: PLATFORM_OUTBOX, useExisting: PlatformOutbox },
];

/**
 * The durable outbox on BullMQ: `PlatformOutboxModule.forRoot({ connection, worker, queueName })`. Import it beside
 * `PlatformAuthModule` (or `forTenants`); a process with `worker: false` only enqueues.
 */
@Module({})
export class PlatformOutboxModule {
  static forRoot(options: PlatformOutboxModuleOptions = {}): DynamicModule {
    return withOutbox(ConfigurablePlatformOutboxModule.forRoot(options));
  }

  /** The same, with the options from a factory, a class or an existing provider. */
  static forRootAsync(options: PlatformOutboxModuleAsyncOptions): DynamicModule {
    return withOutbox(ConfigurablePlatformOutboxModule.forRootAsync(options));
  }
}

/** The options provider gives the options with the Redis password and URL sealed (`sealConnection`). */
function sealedOptions(provider: Provider): Provider {
  if (typeof provider !== 'object' || provider.provide !== PLATFORM_OUTBOX_OPTIONS) return provider;
  if ('useValue' in provider)
    return { ...provider, useValue: sealConnection(provider.useValue as PlatformOutboxOptions) };
  if ('useFactory' in provider) {
    const factory = provider.useFactory;
    return {
      ...provider,
      useFactory: async (...args: unknown[]) => sealConnection((await factory(...args)) as PlatformOutboxOptions),
    };
  }
  return provider;
}

function withOutbox(definition: DynamicModule): DynamicModule {
  return {
    ...definition,
    module: PlatformOutboxModule,
    providers: [...(definition.providers ?? []).map(sealedOptions), ...PROVIDERS],
    exports: [PlatformOutbox, PLATFORM_OUTBOX],
  };
}
