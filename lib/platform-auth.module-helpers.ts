import { ConfigurableModuleBuilder, type DynamicModule, type FactoryProvider, type Provider } from '@nestjs/common';

/**
 * The definition of a module configured with `forRoot(options)` / `forRootAsync(...)` and the `isGlobal` extra, for
 * `PlatformAuthModule` and `PlatformUserAuthModule` alike.
 */
export function configurableModule<Options, Extras extends { isGlobal?: boolean }>(moduleName: string) {
  return new ConfigurableModuleBuilder<Options>({ moduleName })
    .setClassMethodName('forRoot')
    .setExtras<Extras>({ isGlobal: false } as Extras, (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
    }))
    .build();
}

/**
 * `definition` with its options provider (`token`) giving `own(options)`: a copy of the caller's options, never the
 * caller's object. The copy loses its secrets and PEM text after start-up, and the caller's object stays intact for
 * reuse (another module, a test, a ConfigService namespace).
 */
export function withOwnedOptions<T>(
  definition: DynamicModule,
  token: string | symbol,
  own: (options: unknown) => T,
): DynamicModule {
  const providers = definition.providers?.map((provider): Provider => {
    if (typeof provider !== 'object' || provider.provide !== token) return provider;
    if ('useValue' in provider) return { provide: token, useValue: own(provider.useValue) };
    if ('useFactory' in provider) {
      const { useFactory, inject } = provider as FactoryProvider<unknown>;
      return { provide: token, useFactory: async (...args: unknown[]) => own(await useFactory(...args)), inject };
    }
    return provider;
  });
  return { ...definition, providers };
}
