import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { SetupServer } from 'msw/node';
import { afterEach } from 'vitest';
import { HttpService } from '@nestjs/axios';
import {
  PlatformAuthModule,
  PlatformTenants,
  TokenProvider,
  type PlatformAuthOptions,
  type PlatformTenant,
} from 'nestjs-platform-auth';
import {
  FakeClock,
  PlatformEmulator,
  type EmulatedIntegration,
  type PlatformEmulatorOptions,
} from 'nestjs-platform-auth/testing';

/** Where tests reach the emulator through its MSW handlers: https, off loopback, no port to listen on. */
export const MSW_BASE_URL = 'https://platform.test';

export interface PlatformFixture {
  clock: FakeClock;
  platform: PlatformEmulator;
  /** The platform URL the module is configured with: the emulator's, or `MSW_BASE_URL` with `msw`. */
  url: string;
  integration: EmulatedIntegration;
  moduleRef: TestingModule;
  tokens: TokenProvider;
  http: HttpService;
  /** With `tenant: true`: the one tenant, whose tokens `tokens` are. */
  tenant?: PlatformTenant;
  close(): Promise<void>;
}

/** The one tenant of a fixture started with `tenant: true`. */
const TENANT_ID = 'conformance';

/**
 * An emulator and a Nest module pointed at it, sharing one fake clock: the emulator's idea of "now" and the
 * library's are the same clock, so a test moves time for both without sleeping.
 */
export async function startPlatformFixture(
  options: {
    module?: Partial<PlatformAuthOptions>;
    emulator?: PlatformEmulatorOptions;
    autoAdvance?: boolean;
    /** Options that depend on the emulated integration (its key and certificate written to files, say). */
    moduleFor?: (integration: EmulatedIntegration) => Partial<PlatformAuthOptions>;
    /** Nest's testing logger prints errors only; pass one to see warnings. */
    logger?: LoggerService;
    /** The integration as the one tenant of `forTenants` instead of `forRoot`: the same settings, resolved per tenant. */
    tenant?: boolean;
    /**
     * The module talks to `MSW_BASE_URL`, where `msw` answers with the emulator's handlers (`useMswServer` of
     * msw-server.ts), instead of to the emulator's own URL.
     */
    msw?: SetupServer;
  } = {},
): Promise<PlatformFixture> {
  const clock = new FakeClock(Date.now(), { autoAdvance: options.autoAdvance ?? true });
  const platform = await PlatformEmulator.start({
    now: () => clock.now(),
    ...(options.msw && { audience: new URL(MSW_BASE_URL).host }),
    ...options.emulator,
  });
  const integration = await platform.createIntegration();
  const url = options.msw ? MSW_BASE_URL : platform.url;
  if (options.msw) {
    // Loaded only here: the files that never go through MSW do not load it.
    const { createPlatformHandlers } = await import('nestjs-platform-auth/testing/msw');
    options.msw.use(...createPlatformHandlers(platform, { baseUrl: url }));
  }
  const settings: PlatformAuthOptions = {
    ...integration.moduleOptions,
    baseUrl: url,
    clock,
    // Tests count exchanges from zero and move time before the first one; the boot-time check has tests of its own.
    startupCheck: 'off',
    exchange: { retry: { baseDelayMs: 100, maxDelayMs: 2_000, maxAttempts: 4, maxTotalMs: 10_000 } },
    ...options.module,
    ...options.moduleFor?.(integration),
  };
  const { clock: _clock, ...tenantSettings } = settings;
  const builder = Test.createTestingModule({
    imports: [
      options.tenant
        ? PlatformAuthModule.forTenants({
            clock,
            resolve: (tenantId) => Promise.resolve(tenantId === TENANT_ID ? tenantSettings : undefined),
          })
        : PlatformAuthModule.forRoot(settings),
    ],
  });
  if (options.logger) builder.setLogger(options.logger);
  const moduleRef = await builder.compile();
  await moduleRef.init();
  const tenant = options.tenant ? await moduleRef.get(PlatformTenants).get(TENANT_ID) : undefined;
  return {
    clock,
    platform,
    url,
    integration,
    moduleRef,
    tokens: tenant?.tokens ?? moduleRef.get(TokenProvider),
    http: tenant?.http ?? moduleRef.get(HttpService),
    tenant,
    close: once(async () => {
      await moduleRef.close();
      await platform.close();
    }),
  };
}

/**
 * For a test file: `const start = usePlatformFixtures()` at the top level gives a `start()` whose fixtures (any
 * number per test) are closed after each test.
 */
export function usePlatformFixtures(): (...args: Parameters<typeof startPlatformFixture>) => Promise<PlatformFixture> {
  const open: PlatformFixture[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((fixture) => fixture.close()));
  });
  return async (...args) => {
    const fixture = await startPlatformFixture(...args);
    open.push(fixture);
    return fixture;
  };
}

function once(action: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= action());
}
