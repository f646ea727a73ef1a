import 'reflect-metadata';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PlatformAuthExceptionFilter,
  PlatformAuthModule,
  PlatformHttpService,
  TokenProvider,
} from 'nestjs-platform-auth';
import { createTestCredentials, FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { refusedOrigin } from '../support/loopback-server.js';

@Controller()
class BillingController {
  constructor(private readonly http: PlatformHttpService) {}

  @Get('billing')
  async billing(): Promise<unknown> {
    return (await firstValueFrom(this.http.get('/api/billing'))).data;
  }
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

async function appFor(
  adapter: 'express' | 'fastify',
  options: Parameters<typeof PlatformAuthModule.forRoot>[0],
): Promise<{ url: string; logger: CapturingLogger; app: INestApplication }> {
  @Module({
    // The filter answers for a request's own exchange; a boot-time exchange would answer before the first request.
    imports: [PlatformAuthModule.forRoot({ startupCheck: 'off', ...options })],
    controllers: [BillingController],
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
  return { url: (await app.getUrl()).replace('[::1]', '127.0.0.1'), logger, app };
}

/** Checks a 503's body, and that neither it nor the operators' log holds the token: the lines logged. */
async function answered503(
  response: Response,
  { app, logger }: { app: INestApplication; logger: CapturingLogger },
  code: string,
  message: string,
): Promise<string[]> {
  expect(response.status).toBe(503);
  const body = await response.text();
  expect(JSON.parse(body)).toEqual({ statusCode: 503, error: 'Service Unavailable', message, code });
  const logged = logger.messages('error');
  const token = app.get(TokenProvider).peekAccessToken();
  expect(token).toBeDefined();
  expect(body + logged.join('\n')).not.toContain(token);
  return logged;
}

describe.each(['express', 'fastify'] as const)('PlatformAuthExceptionFilter on %s', (adapter) => {
  it('answers 502 with a safe body when the platform refuses the credentials', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    const stranger = await createTestCredentials();
    const { url, logger } = await appFor(adapter, {
      ...integration.moduleOptions,
      key: { privateKey: stranger.privateKeyPem, certificate: stranger.certificatePem },
    });

    const response = await fetch(`${url}/billing`);
    expect(response.status).toBe(502);
    expect(response.headers.get('retry-after')).toBeNull();
    const body = await response.text();
    expect(JSON.parse(body)).toEqual({
      statusCode: 502,
      error: 'Bad Gateway',
      message: 'This service could not authenticate to the platform it depends on.',
      code: 'PLATFORM_AUTH_TOKEN_EXCHANGE',
    });
    // The hint and the platform's words stay in the operators' log.
    expect(body).not.toContain('thumbprint');
    expect(logger.messages('error')).toEqual([
      expect.stringMatching(/^502 answered for a failed token exchange: .*certificate/),
    ]);
    expect(logger.messages('warn')).toEqual([]);
  });

  it('answers a refusal 502 on the first call and alike while callers are held back after it', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    const stranger = await createTestCredentials();
    // Time stands still, so the second call is inside the back-off however slow the machine is.
    const { url } = await appFor(adapter, {
      ...integration.moduleOptions,
      key: { privateKey: stranger.privateKeyPem, certificate: stranger.certificatePem },
      clock: new FakeClock(),
    });

    const first = await fetch(`${url}/billing`);
    const during = await fetch(`${url}/billing`);
    // One exchange: the second caller got the back-off's error, not a fresh refusal.
    expect(platform.counters.exchanges).toMatchObject({ total: 1, rejected: 1 });
    for (const response of [first, during]) {
      expect(response.status).toBe(502);
      expect(response.headers.get('retry-after')).toBeNull();
      expect(await response.json()).toMatchObject({ statusCode: 502, error: 'Bad Gateway' });
    }
  });

  it('answers 503 when the platform cannot be reached', async () => {
    const platform = await PlatformEmulator.start();
    const integration = await platform.createIntegration();
    await platform.close();
    const { url, logger } = await appFor(adapter, {
      ...integration.moduleOptions,
      // Not the closed emulator's port: another test's server may be given it meanwhile.
      baseUrl: await refusedOrigin(),
      exchange: { retry: { maxAttempts: 1 } },
    });

    const response = await fetch(`${url}/billing`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    expect(logger.messages('error')).toEqual([expect.stringMatching(/^503 answered/)]);
  });

  it('answers 503 with the Retry-After the platform asked for', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '7' } });
    const { url } = await appFor(adapter, { ...integration.moduleOptions, exchange: { retry: { maxDelayMs: 1_000 } } });

    const response = await fetch(`${url}/billing`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('7');
    // Callers that come during the back-off are told how long is left.
    const again = await fetch(`${url}/billing`);
    expect(again.status).toBe(503);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThanOrEqual(6);
  });

  it('answers 503 with the Retry-After of a platform that takes no calls for longer than retry.maxDelayMs', async () => {
    // An hour ahead of the wall clock: a Retry-After counted on any clock but the integration's would be an hour off.
    // On a whole second, as an HTTP date is.
    const clock = new FakeClock(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
    const platform = await PlatformEmulator.start({ now: () => clock.now() });
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    const at = new Date(clock.now() + 90_000);
    platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': at.toUTCString() } }, 'api');
    const started = await appFor(adapter, { ...integration.moduleOptions, clock });

    const response = await fetch(`${started.url}/billing`);
    expect(response.headers.get('retry-after')).toBe('90');
    const logged = await answered503(
      response,
      started,
      'PLATFORM_AUTH_PLATFORM_UNAVAILABLE',
      'The platform this service depends on is unavailable; retry later.',
    );
    expect(logged).toEqual([
      expect.stringMatching(/^503 answered for .*: The platform answered 503 to GET .*\/api\/billing/),
    ]);
    expect(platform.counters.apiCalls.total).toBe(1);
  });

  it('answers 503 with the Retry-After of a turn under the rate limit further ahead than maxWaitMs', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    // Time stands still: the first call takes the one turn of ten seconds, the second's lies that far ahead.
    const started = await appFor(adapter, {
      ...integration.moduleOptions,
      clock: new FakeClock(),
      rateLimit: { requestsPerSecond: 0.1, maxWaitMs: 0 },
    });

    expect((await fetch(`${started.url}/billing`)).status).toBe(200);
    const response = await fetch(`${started.url}/billing`);
    const logged = await answered503(
      response,
      started,
      'PLATFORM_AUTH_RATE_LIMIT_WAIT',
      'This service is at its limit of calls to the platform it depends on; retry later.',
    );
    expect(logged).toEqual([expect.stringMatching(/^503 answered for .*: Rate limit of integration "default"/)]);
    expect(platform.counters.apiCalls.total).toBe(1);
    // The header is the error's own wait, rounded up to whole seconds.
    const waitMs = Number(/turn is (\d+) ms away/.exec(logged[0])?.[1]);
    expect(waitMs).toBeGreaterThanOrEqual(10_000);
    expect(response.headers.get('retry-after')).toBe(String(Math.ceil(waitMs / 1000)));
  });
});
