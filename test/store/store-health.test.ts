import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule } from 'nestjs-platform-auth';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useCleanup } from '../support/cleanup.js';
import { refusedPort } from '../support/loopback-server.js';
import { startStorePlatform } from '../support/store-fleet.js';

const track = useCleanup();

describe('the health indicator while the store cannot be used', () => {
  it('stays up (the app still calls the platform) and reports the store degraded, with the reason', async () => {
    const { shared, clock } = await startStorePlatform(track, {
      url: `redis://:s3cret-pass@127.0.0.1:${await refusedPort()}`,
    });

    @Controller()
    class HealthController {
      constructor(
        private readonly health: HealthCheckService,
        private readonly indicator: PlatformAuthHealthIndicator,
      ) {}
      @Get('health')
      @HealthCheck()
      check() {
        return this.health.check([() => this.indicator.isHealthy('platform', { mode: 'active' })]);
      }
    }
    @Module({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        PlatformAuthModule.forRoot({ ...shared, clock, logger: new CapturingLogger() }),
      ],
      controllers: [HealthController],
      providers: [PlatformAuthHealthIndicator],
    })
    class AppModule {}

    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    track(app);
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.platform).toMatchObject({
      status: 'up',
      state: 'valid',
      sharedStore: 'degraded',
      sharedStoreProblem: 'ECONNREFUSED',
    });
    expect(JSON.stringify(response.body)).not.toContain('s3cret-pass');
  });
});
