import 'reflect-metadata';
import { Controller, Get, Module, Param, type INestApplication } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthExceptionFilter,
  PlatformAuthModule,
  PlatformTenants,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { eventually } from '../support/eventually.js';
import { emulatedTenant } from '../tenants/tenants-kit.js';

const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;

beforeAll(async () => {
  certificates = await createTestCertificates(4, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
});

afterAll(() => platform.close());

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

/** What the application's resolver answers: a database that knows t0…t3, one tenant with broken settings, one down. */
const asked: string[] = [];
function resolve(tenantId: string): Promise<PlatformAuthOptions | undefined> {
  asked.push(tenantId);
  if (tenantId === 'bad')
    return Promise.resolve({ baseUrl: 'ftp://settings.example', machineId: '', key: { privateKey: 'junk' } });
  if (tenantId === 'down') return Promise.reject(new Error('connection refused: password=hunter2'));
  if (tenantId === 'hang') return new Promise(() => undefined);
  return Promise.resolve(emulatedTenant(platform.url, certificates, tenantId));
}

@Controller()
class TenantBillingController {
  constructor(private readonly tenants: PlatformTenants) {}

  @Get('tenants/:id/billing')
  async billing(@Param('id') tenantId: string): Promise<unknown> {
    const tenant = await this.tenants.get(tenantId);
    return (await firstValueFrom(tenant.http.get('/api/billing'))).data;
  }
}

async function appFor(adapter: 'express' | 'fastify'): Promise<{ url: string; logger: CapturingLogger }> {
  @Module({
    imports: [PlatformAuthModule.forTenants({ clock, resolve, resolveTimeoutMs: 5_000 })],
    controllers: [TenantBillingController],
    providers: [{ provide: APP_FILTER, useClass: PlatformAuthExceptionFilter }],
  })
  class AppModule {}
  const logger = new CapturingLogger();
  const app: INestApplication = await NestFactory.create(
    AppModule,
    adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(),
    { logger },
  );
  await app.listen(0, '127.0.0.1');
  closing.push(() => app.close());
  return { url: (await app.getUrl()).replace('[::1]', '127.0.0.1'), logger };
}

const logged = (logger: CapturingLogger) => logger.lines.map((line) => line.message).join('\n');

describe.each(['express', 'fastify'] as const)('PlatformAuthExceptionFilter for forTenants on %s', (adapter) => {
  it('answers an unknown tenant 404 and a tenant with invalid settings 500 with its code, never the settings', async () => {
    const { url, logger } = await appFor(adapter);

    const unknown = await fetch(`${url}/tenants/nobody/billing`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      message: 'Unknown tenant.',
      code: 'PLATFORM_AUTH_UNKNOWN_TENANT',
    });

    const bad = await fetch(`${url}/tenants/bad/billing`);
    expect(bad.status).toBe(500);
    const body = await bad.text();
    expect(JSON.parse(body)).toEqual({
      statusCode: 500,
      error: 'Internal Server Error',
      message: "This tenant's settings are invalid; the operators have been told.",
      code: 'PLATFORM_AUTH_TENANT_CONFIG',
    });
    expect(body).not.toMatch(/ftp|settings\.example|junk|machineId/);

    expect(logger.messages('warn')).toContainEqual(
      expect.stringMatching(/^404 answered for an unknown tenant: .*'nobody'/),
    );
    expect(logger.messages('error')).toContainEqual(
      expect.stringMatching(/^500 answered for a tenant with invalid settings: Invalid settings of tenant 'bad'/),
    );
  });

  it('answers a resolver that is down or gives no answer in time 503 with Retry-After', async () => {
    const { url, logger } = await appFor(adapter);

    const down = await fetch(`${url}/tenants/down/billing`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('1');
    const body = await down.text();
    expect(JSON.parse(body)).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: "This tenant's settings could not be read; retry later.",
      code: 'PLATFORM_AUTH_TENANT_RESOLUTION',
    });

    const before = asked.filter((id) => id === 'hang').length;
    const hanging = fetch(`${url}/tenants/hang/billing`);
    await eventually(() => expect(asked.filter((id) => id === 'hang')).toHaveLength(before + 1));
    clock.advance(5_000);
    const timedOut = await hanging;
    expect(timedOut.status).toBe(503);
    expect(timedOut.headers.get('retry-after')).toBe('1');
    expect(await timedOut.json()).toMatchObject({ code: 'PLATFORM_AUTH_TENANT_RESOLUTION' });

    expect(logger.messages('error')).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^503 answered for a failed tenant resolution: Resolving tenant 'down' failed \(Error\)/),
        expect.stringMatching(/^503 answered for a tenant resolution that timed out: Resolving tenant 'hang' failed/),
      ]),
    );
    expect(body + logged(logger)).not.toContain('hunter2');
  });

  it('names the tenant in its failed exchange and in every line its integration logs, and keeps it out of the body', async () => {
    platform.setIntegrationStatus('machine-3', 'Disabled');
    try {
      const { url, logger } = await appFor(adapter);
      const ok = await fetch(`${url}/tenants/t1/billing`);
      expect(await ok.json()).toMatchObject({ machineId: 'machine-1' });

      const refused = await fetch(`${url}/tenants/t3/billing`);
      expect(refused.status).toBe(502);
      expect(await refused.text()).not.toContain('t3');
      expect(logger.messages('error')).toEqual([
        expect.stringMatching(/^502 answered for a failed token exchange: Tenant 't3': token endpoint answered/),
      ]);
      expect(logger.messages('log')).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Tenant 't1': Integration 'tenants' started: /),
          expect.stringMatching(/^Tenant 't3': Integration 'tenants' started: /),
        ]),
      );
    } finally {
      platform.setIntegrationStatus('machine-3', 'Active');
    }
  });
});
