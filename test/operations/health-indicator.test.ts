import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { expectNoSecrets } from '../support/leak-check.js';

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
async function startHealthApp(): Promise<HealthApp> {
  const clock = new FakeClock(Date.now(), { autoAdvance: true });
  const platform = await PlatformEmulator.start({ now: () => clock.now() });
  const integration = await platform.createIntegration();

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
      PlatformAuthModule.forRoot({ ...integration.moduleOptions, clock, retry: { maxAttempts: 1 } }),
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
        PlatformAuthModule.forRoot({ ...main.moduleOptions, retry: { maxAttempts: 1 } }),
        PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions, retry: { maxAttempts: 1 } }),
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
    await expect(
      app.get(PlatformAuthHealthIndicator).isHealthy('x', { integration: 'not-registered-anywhere' }),
    ).rejects.toThrow(/no integration named 'not-registered-anywhere' is registered/);
  });
});
