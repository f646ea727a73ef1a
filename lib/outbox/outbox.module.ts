import {
  ConfigurableModuleBuilder,
  Module,
  type ConfigurableModuleAsyncOptions,
  type DynamicModule,
  type Provider,
} from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { PlatformAuthModule } from '../index.js';
import { PlatformOutboxHealthIndicator } from './outbox.health.js';
import { OutboxSenders } from './outbox.senders.js';
import { OUTBOX_VARIABLE_NAMES, resolveOutboxSettings, type OutboxSettings } from './outbox.settings.js';
import type { PlatformOutboxOptions } from './outbox.types.js';
import { PlatformOutbox } from './platform-outbox.js';

export interface PlatformOutboxModuleExtras {
  /** Register the module globally, so feature modules inject `PlatformOutbox` without importing it. */
  isGlobal?: boolean;
}

const definition = new ConfigurableModuleBuilder<PlatformOutboxOptions>({ moduleName: 'PlatformOutbox' })
  .setClassMethodName('forRoot')
  .setExtras<PlatformOutboxModuleExtras>({ isGlobal: false }, (built, extras) => ({
    ...built,
    global: extras.isGlobal,
  }))
  .build();
const { ConfigurableModuleClass: ConfigurablePlatformOutboxModule, MODULE_OPTIONS_TOKEN: OPTIONS } = definition;

/** What `forRoot` takes: the options, and `isGlobal`. */
export type PlatformOutboxModuleOptions = PlatformOutboxOptions & Partial<PlatformOutboxModuleExtras>;
/** What `forRootAsync` takes: `useFactory` / `useClass` / `useExisting` for the options, and `isGlobal`. */
export type PlatformOutboxModuleAsyncOptions = ConfigurableModuleAsyncOptions<PlatformOutboxOptions, 'create'> &
  Partial<PlatformOutboxModuleExtras>;

const PROVIDERS: Provider[] = [
  OutboxSenders,
  {
    provide: PlatformOutbox,
    useFactory: (settings: OutboxSettings, senders: OutboxSenders) =>
      new PlatformOutbox(settings, (message) => senders.senderOf(message)),
    inject: [OPTIONS, OutboxSenders],
  },
  PlatformOutboxHealthIndicator,
  PlatformAuthModule.readsVariables(OUTBOX_VARIABLE_NAMES),
];

/**
 * The durable outbox on BullMQ: `PlatformOutboxModule.forRoot({ connection, worker, queueName })`. Import it beside
 * `PlatformAuthModule` (or `forTenants`); a process with `worker: false` only enqueues. Inject `PlatformOutbox`, and
 * `PlatformOutboxHealthIndicator` for a Terminus health check.
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

/**
 * The options provider gives the settings, checked with the environment (every problem at once, at start-up): the
 * Redis password and a URL, which may hold one, kept as secrets that no dump of the application's providers renders.
 */
function settingsOf(provider: Provider): Provider {
  if (typeof provider !== 'object' || provider.provide !== OPTIONS) return provider;
  if ('useValue' in provider) {
    const options = provider.useValue as PlatformOutboxOptions;
    return { provide: OPTIONS, useFactory: () => resolveOutboxSettings(options, process.env) };
  }
  if ('useFactory' in provider) {
    const { useFactory, inject } = provider;
    return {
      provide: OPTIONS,
      useFactory: async (...args: unknown[]) =>
        resolveOutboxSettings((await useFactory(...args)) as PlatformOutboxOptions, process.env),
      inject,
    };
  }
  return provider;
}

function withOutbox(built: DynamicModule): DynamicModule {
  return {
    ...built,
    module: PlatformOutboxModule,
    imports: [...(built.imports ?? []), DiscoveryModule],
    providers: [...(built.providers ?? []).map(settingsOf), ...PROVIDERS],
    exports: [PlatformOutbox, PlatformOutboxHealthIndicator],
  };
}
