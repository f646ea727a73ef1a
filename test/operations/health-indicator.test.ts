import { Controller, Get, Module, type INestApplication, type ModuleMetadata, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { createPrivateKey } from 'node:crypto';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type EmulatedIntegration,
} from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { createSecretVolume, type SecretVolume } from '../support/secret-volume.js';
import { blockContaining, importBlock, scratchProject } from '../support/docs-blocks.js';

const DAY = 86_400_000;

interface HealthApp {
  app: INestApplication;
  platform: PlatformEmulator;
  integration: EmulatedIntegration;
  clock: FakeClock;
  tokens: TokenProvider;
}

const open: HealthApp[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.app.close();
    await h.platform.close();
  }
});

/** An app with `/passive` and `/active` health endpoints on the indicator, against the emulator, on a fake clock. */
async function startHealthApp(
  options: Partial<PlatformAuthOptions> | ((integration: EmulatedIntegration) => Partial<PlatformAuthOptions>) = {},
): Promise<HealthApp> {
  const clock = new FakeClock(Date.now(), { autoAdvance: true });
  const platform = await PlatformEmulator.start({ now: () => clock.now() });
  const integration = await platform.createIntegration();
  const module = typeof options === 'function' ? options(integration) : options;

  @Controller()
  class HealthController {
    constructor(
      private readonly health: HealthCheckService,
      private readonly indicator: PlatformAuthHealthIndicator,
    ) {}
    @Get('passive')
    @HealthCheck()
    passive() {
      return this.health.check([() => this.indicator.isHealthy('platform')]);
    }
    @Get('active')
    @HealthCheck()
    active() {
      return this.health.check([() => this.indicator.isHealthy('platform', { mode: 'active' })]);
    }
  }
  @Module({
    imports: [
      TerminusModule.forRoot({ logger: false }),
      PlatformAuthModule.forRoot({
        ...integration.moduleOptions,
        clock,
        exchange: { retry: { maxAttempts: 1 } },
        // The probes are what acquires (or does not acquire) a token here, so the tests count exchanges from zero.
        startupCheck: 'off',
        ...module,
      }),
    ],
    controllers: [HealthController],
    providers: [PlatformAuthHealthIndicator],
  })
  class AppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  const started = { app, platform, integration, clock, tokens: app.get(TokenProvider) };
  open.push(started);
  return started;
}

describe('PlatformAuthHealthIndicator', () => {
  it('passive: up before any exchange and never exchanges, however often it is probed', async () => {
    const h = await startHealthApp();
    for (let i = 0; i < 20; i += 1) {
      const response = await request(h.app.getHttpServer()).get('/passive').expect(200);
      expect(response.body.info.platform).toMatchObject({ status: 'up', state: 'none' });
    }
    expect(h.platform.counters.exchanges.total).toBe(0);
  });

  it('active: fetches a token only when none is cached, one exchange for 50 concurrent probes', async () => {
    const h = await startHealthApp();
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => request(h.app.getHttpServer()).get('/active')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(h.platform.counters.exchanges.total).toBe(1);
    await request(h.app.getHttpServer()).get('/active').expect(200);
    expect(h.platform.counters.exchanges.total).toBe(1);
    const body = (await request(h.app.getHttpServer()).get('/active')).body as { info: { platform: object } };
    expect(body.info.platform).toMatchObject({ status: 'up', state: 'valid', lastExchange: { ok: true } });
  });

  it('is down (503) with safe detail when the integration is suspended and no token is left', async () => {
    const h = await startHealthApp();
    const token = await h.tokens.getAccessToken();
    h.platform.setIntegrationStatus(h.integration.machineId, 'Suspended');
    // While the cached token is usable the app still works: up.
    await request(h.app.getHttpServer()).get('/passive').expect(200);
    h.tokens.invalidate(token);
    const response = await request(h.app.getHttpServer()).get('/active').expect(503);
    expect(response.body.error.platform).toMatchObject({
      status: 'down',
      state: 'backoff',
      message: expect.stringMatching(/last token exchange failed/),
      lastExchange: { ok: false, reason: 'http_error', status: 400 },
      consecutiveFailures: 1,
    });
    expectNoSecrets(response.text, [token, h.integration.privateKeyPem, h.integration.certificatePem]);
    // In back-off, active probes do not ask the platform again.
    const exchanges = h.platform.counters.exchanges.total;
    await request(h.app.getHttpServer()).get('/active').expect(503);
    await request(h.app.getHttpServer()).get('/passive').expect(503);
    expect(h.platform.counters.exchanges.total).toBe(exchanges);
  });

  it('is down when the certificate has expired, even with a token cached', async () => {
    const h = await startHealthApp();
    await h.tokens.getAccessToken();
    h.clock.advance(366 * DAY);
    const response = await request(h.app.getHttpServer()).get('/passive').expect(503);
    expect(response.body.error.platform).toMatchObject({
      status: 'down',
      message: expect.stringMatching(/certificate has expired/),
      certificate: { expired: true },
    });
  });
});

describe('PlatformAuthHealthIndicator across a switch to the next pair', () => {
  it('stays up and says the files are behind, naming both thumbprints, until they are promoted', async () => {
    const next = await createTestCredentials();
    const h = await startHealthApp({ next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } });
    const current = h.integration.thumbprint;
    const token = await h.tokens.getAccessToken();
    const before = await request(h.app.getHttpServer()).get('/passive').expect(200);
    expect(before.body.info.platform.credentialsSwitched).toBeUndefined();
    h.platform.replaceCertificate(h.integration.machineId, next.certificatePem);
    h.tokens.invalidate(token);
    const response = await request(h.app.getHttpServer()).get('/active').expect(200);
    expect(response.body.info.platform).toMatchObject({
      status: 'up',
      credentialsSwitched: { from: current, to: next.thumbprint, action: expect.stringMatching(/files/) },
    });
    expectNoSecrets(response.text, [next.privateKeyPem, h.integration.privateKeyPem]);
  });

  it('stays up and names the problem when the files put back the pair the platform refused', async () => {
    const next = await createTestCredentials();
    let files: SecretVolume | undefined;
    const h = await startHealthApp((integration) => {
      files = createSecretVolume({ key: integration.privateKeyPem, certificate: integration.certificatePem });
      return {
        key: { privateKeyPath: files.keyPath, certificatePath: files.certificatePath },
        credentialsReloadIntervalMs: 30_000,
        next: { privateKey: next.privateKeyPem, certificate: next.certificatePem },
      };
    });
    onTestFinished(() => files!.remove());
    const refused = { ...h.integration };
    h.tokens.invalidate(await h.tokens.getAccessToken());
    h.platform.replaceCertificate(h.integration.machineId, next.certificatePem);
    await request(h.app.getHttpServer()).get('/active').expect(200);
    expect(h.tokens.status().credentials.thumbprint).toBe(next.thumbprint);

    const pkcs1 = createPrivateKey(refused.privateKeyPem).export({ type: 'pkcs1', format: 'pem' }).toString();
    files!.update({ key: pkcs1, certificate: refused.certificatePem });
    await eventually(() => {
      h.clock.advance(30_000);
      expect(h.tokens.status().credentials.reload.state).toBe('rejected');
    });
    const response = await request(h.app.getHttpServer()).get('/passive').expect(200);
    expect(response.body.info.platform).toMatchObject({
      status: 'up',
      credentialReload: 'rejected',
      credentialReloadProblems: [expect.stringMatching(/^key\.certificatePath .*refused as not registered/)],
      credentialsSwitched: { from: refused.thumbprint, to: next.thumbprint },
    });
    expectNoSecrets(response.text, [refused.privateKeyPem, pkcs1, next.privateKeyPem]);
  });
});

describe('PlatformAuthHealthIndicator with named integrations', () => {
  it('checks the integration it is asked about, and names it in the detail', async () => {
    const platform = await PlatformEmulator.start();
    const main = await platform.createIntegration({ name: 'main' });
    const billing = await platform.createIntegration({ name: 'billing' });

    @Controller()
    class HealthController {
      constructor(
        private readonly health: HealthCheckService,
        private readonly indicator: PlatformAuthHealthIndicator,
      ) {}
      @Get('health')
      @HealthCheck()
      check() {
        return this.health.check([
          () => this.indicator.isHealthy('platform', { mode: 'active' }),
          () => this.indicator.isHealthy('billing', { mode: 'active', integration: 'billing' }),
        ]);
      }
    }
    @Module({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        // No token at boot: the suspension below must be met by the active probe's own exchange.
        PlatformAuthModule.forRoot({
          ...main.moduleOptions,
          exchange: { retry: { maxAttempts: 1 } },
          startupCheck: 'off',
        }),
        PlatformAuthModule.forRoot({
          name: 'billing',
          ...billing.moduleOptions,
          exchange: { retry: { maxAttempts: 1 } },
          startupCheck: 'off',
        }),
      ],
      controllers: [HealthController],
      providers: [PlatformAuthHealthIndicator],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    open.push({ app, platform, integration: main, clock: new FakeClock(Date.now()), tokens: app.get(TokenProvider) });

    platform.setIntegrationStatus(billing.machineId, 'Suspended');
    const response = await request(app.getHttpServer()).get('/health').expect(503);
    expect(response.body).toMatchObject({
      info: { platform: { status: 'up', integration: 'default' } },
      error: { billing: { status: 'down', integration: 'billing', lastExchange: { ok: false } } },
    });
    const unknown = await app.get(PlatformAuthHealthIndicator).isHealthy('x', { integration: 'biling' });
    expect(unknown).toEqual({
      x: {
        status: 'down',
        message:
          "no integration 'biling' is registered in this application; registered integrations: 'default', 'billing'",
        registeredIntegrations: ['default', 'billing'],
      },
    });
  });
});

describe('PlatformAuthHealthIndicator asked about an integration that is not registered', () => {
  /** An app whose `/health` checks the integrations it is given, each under its own name. */
  async function appChecking(
    imports: ModuleMetadata['imports'],
    checked: readonly (string | undefined)[],
  ): Promise<INestApplication> {
    @Controller()
    class HealthController {
      constructor(
        private readonly health: HealthCheckService,
        private readonly indicator: PlatformAuthHealthIndicator,
      ) {}
      @Get('health')
      @HealthCheck()
      check() {
        return this.health.check(
          checked.map((integration) => () => this.indicator.isHealthy(integration ?? 'platform', { integration })),
        );
      }
    }
    @Module({
      imports: [TerminusModule.forRoot({ logger: false }), ...(imports ?? [])],
      controllers: [HealthController],
      providers: [PlatformAuthHealthIndicator],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }

  const apps: INestApplication[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('answers 503 with a message naming the integrations of this application, never a 500', async () => {
    const platform = await PlatformEmulator.start();
    try {
      const billing = await platform.createIntegration();
      const app = await appChecking(
        [PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions })],
        ['billing', 'payments'],
      );
      apps.push(app);
      const response = await request(app.getHttpServer()).get('/health').expect(503);
      expect(response.body).toMatchObject({
        info: { billing: { status: 'up', integration: 'billing' } },
        error: {
          payments: {
            status: 'down',
            message: "no integration 'payments' is registered in this application; registered integrations: 'billing'",
            registeredIntegrations: ['billing'],
          },
        },
      });
    } finally {
      await platform.close();
    }
  });

  it('names only its own application’s integrations when two applications share the process', async () => {
    const platform = await PlatformEmulator.start();
    try {
      const billing = await platform.createIntegration();
      const main = await platform.createIntegration();
      apps.push(await appChecking([PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions })], []));
      const other = await appChecking([PlatformAuthModule.forRoot(main.moduleOptions)], ['billing']);
      apps.push(other);
      const response = await request(other.getHttpServer()).get('/health').expect(503);
      expect(response.body.error.billing).toEqual({
        status: 'down',
        message: "no integration 'billing' is registered in this application; registered integrations: 'default'",
        registeredIntegrations: ['default'],
      });
    } finally {
      await platform.close();
    }
  });

  it('is down, not an error, without any PlatformAuthModule, and does not echo a name that is no name', async () => {
    const app = await appChecking([], [undefined, 'x'.repeat(200), 'Bad\nName']);
    apps.push(app);
    const response = await request(app.getHttpServer()).get('/health').expect(503);
    const messages = Object.values(response.body.error as Record<string, { message: string }>).map((e) => e.message);
    expect(messages).toEqual([
      "no integration 'default' is registered in this application; registered integrations: none (import PlatformAuthModule)",
      'no integration of that name is registered in this application; registered integrations: none (import PlatformAuthModule)',
      'no integration of that name is registered in this application; registered integrations: none (import PlatformAuthModule)',
    ]);
  });
});

describe('the health module of docs/operations.md', () => {
  it('works as a module of its own beside a PlatformAuthModule that is not global', async () => {
    const scratch = scratchProject();
    const platform = await PlatformEmulator.start();
    try {
      const integration = await platform.createIntegration();
      const block = blockContaining('docs/operations.md', 'class HealthModule');
      const { HealthModule } = await importBlock<{ HealthModule: Type }>(block, scratch.dir);
      @Module({
        imports: [
          PlatformAuthModule.forRoot({ ...integration.moduleOptions, exchange: { retry: { maxAttempts: 1 } } }),
          HealthModule,
        ],
      })
      class AppModule {}
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      try {
        const up = await request(app.getHttpServer()).get('/health').expect(200);
        expect(up.body.info.platform).toMatchObject({ status: 'up', state: 'valid', integration: 'default' });
        app.get(TokenProvider).invalidate(await app.get(TokenProvider).getAccessToken());
        platform.setIntegrationStatus(integration.machineId, 'Suspended');
        const down = await request(app.getHttpServer()).get('/health').expect(503);
        expect(down.body.error.platform).toMatchObject({ status: 'down', lastExchange: { ok: false, status: 400 } });
      } finally {
        await app.close();
      }
    } finally {
      await platform.close();
      scratch.remove();
    }
  });
});
