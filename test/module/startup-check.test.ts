import 'reflect-metadata';
import { createPrivateKey, sign } from 'node:crypto';
import { Controller, Get, Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  PlatformHttpService,
  TokenExchangeError,
  TokenProvider,
  getTokenProviderToken,
  type PlatformAuthOptions,
  type PlatformAuthSigner,
} from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { runStartupCheck } from '../../lib/token/startup.check.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useCleanup } from '../support/cleanup.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { startLoopbackServer } from '../support/loopback-server.js';
import { useRedisServer } from '../support/redis-server.js';
import { startStorePlatform, tokensOf, useStoreFleets } from '../support/store-fleet.js';

const redis = useRedisServer();
const track = useCleanup();
const startStoreFleet = useStoreFleets();

const WARNING = /^Start-up check: no token could be acquired; the application starts anyway\. /;

@Controller()
class BillingController {
  constructor(private readonly http: PlatformHttpService) {}

  @Get('billing')
  async billing(): Promise<number> {
    return (await firstValueFrom(this.http.get('/api/billing'))).status;
  }
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

/** An emulator on `clock` (retry delays pass at once on an auto-advancing one) and one integration on it. */
async function platform(
  clock = new FakeClock(Date.now(), { autoAdvance: true }),
): Promise<{ emulator: PlatformEmulator; integration: EmulatedIntegration; clock: FakeClock }> {
  const emulator = await PlatformEmulator.start({ now: () => clock.now() });
  closing.push(() => emulator.close());
  return { emulator, integration: await emulator.createIntegration(), clock };
}

/** An application of the integrations `imports` builds, not yet initialised; closed after the test. */
function createApp(imports: DynamicModule[]): Promise<{ app: INestApplication; logger: CapturingLogger }>;
function createApp(options: PlatformAuthOptions): Promise<{ app: INestApplication; logger: CapturingLogger }>;
async function createApp(
  what: PlatformAuthOptions | DynamicModule[],
): Promise<{ app: INestApplication; logger: CapturingLogger }> {
  const imports = Array.isArray(what) ? what : [PlatformAuthModule.forRoot(what)];
  @Module({ imports, controllers: Array.isArray(what) ? [] : [BillingController] })
  class AppModule {}
  const logger = new CapturingLogger();
  const app = await NestFactory.create(AppModule, new ExpressAdapter(), { logger });
  closing.push(() => app.close());
  return { app, logger };
}

/** What `promise` rejected with; undefined when it resolved. */
function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

function logOf(logger: CapturingLogger): string {
  return logger.lines.map((line) => line.message).join('\n');
}

describe("the start-up check by default ('warn')", () => {
  it('logs one warning at boot naming the refusal and its hint, and the application starts', async () => {
    const { emulator, integration, clock } = await platform();
    const wrong = { ...integration.moduleOptions, clock, machineId: 'not-registered' };
    // The same refusal under 'fail', for the hint the warning must carry.
    const refused = await rejectionOf((await createApp({ ...wrong, startupCheck: 'fail' })).app.init());
    expect(refused).toBeInstanceOf(TokenExchangeError);
    const { hint } = refused as TokenExchangeError;
    expect(hint).toMatch(/\S/);
    emulator.resetCounters();

    const { app, logger } = await createApp(wrong);
    await app.init();

    const warnings = logger.messages('warn');
    expect(warnings).toEqual([expect.stringMatching(WARNING)]);
    expect(warnings[0]).toMatch(/TokenExchangeError: token endpoint answered HTTP 400 invalid_client/);
    expect(warnings[0]).toContain(hint);
    expect(emulator.counters.exchanges).toMatchObject({ total: 1, rejected: 1 });
    expectNoSecrets(logOf(logger), [integration.privateKeyPem]);
    // What a readiness probe reads: the refusal, from the start.
    expect(app.get(TokenProvider).status()).toMatchObject({
      state: 'backoff',
      lastExchange: { ok: false, reason: 'http_error', oauthError: 'invalid_client' },
    });
  });

  it('makes exactly one exchange at boot, and the first call to the platform uses its token', async () => {
    const { emulator, integration, clock } = await platform();
    const { app, logger } = await createApp({ ...integration.moduleOptions, clock });
    await app.init();
    expect(emulator.counters.exchanges).toMatchObject({ total: 1, accepted: 1 });
    const token = app.get(TokenProvider).peekAccessToken();
    expect(token).toMatch(/\S/);

    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const response = await fetch(`${url}/billing`);
    expect(await response.text()).toBe('200');
    expect(emulator.counters.exchanges.total).toBe(1);
    expect(logger.messages('warn')).toEqual([]);
    expectNoSecrets(logOf(logger), [token, integration.privateKeyPem]);
  });

  it('runs for every integration of the application: forRoot, a named one and forRootAsync', async () => {
    const { emulator, integration, clock } = await platform();
    const billing = await emulator.createIntegration({ name: 'billing' });
    const payments = await emulator.createIntegration({ name: 'payments' });
    const { app } = await createApp([
      PlatformAuthModule.forRoot({ ...integration.moduleOptions, clock }),
      PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions, clock }),
      PlatformAuthModule.forRootAsync({
        name: 'payments',
        useFactory: () => Promise.resolve({ ...payments.moduleOptions, clock }),
      }),
    ]);
    await app.init();
    expect(emulator.counters.exchanges).toMatchObject({ total: 3, accepted: 3 });
    for (const name of [undefined, 'billing', 'payments']) {
      expect(app.get<TokenProvider>(getTokenProviderToken(name)).peekAccessToken(), name).toMatch(/\S/);
    }
  });

  it('with a platform that never answers, boots once the exchange has used its attempts, and warns', async () => {
    const { emulator, integration, clock } = await platform();
    const silent = await startLoopbackServer(() => undefined);
    closing.push(() => silent.close());
    const { app, logger } = await createApp({
      ...integration.moduleOptions,
      baseUrl: silent.url,
      audience: emulator.audience,
      clock,
      exchange: { timeoutMs: 200, retry: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 1_000, maxTotalMs: 10_000 } },
    });
    await app.init();
    // Each attempt ended by its own timeout, and no more attempts than the exchange allows: the boot's bound.
    expect(silent.requests.map((request) => request.method)).toEqual(['POST', 'POST']);
    const warnings = logger.messages('warn');
    expect(warnings).toEqual([expect.stringMatching(WARNING)]);
    expect(warnings[0]).toMatch(/TokenExchangeError: .*did not answer within 200 ms/);
  });

  it('warns, by its typed name and message, when what fails is the key rather than the exchange', async () => {
    const { emulator, integration, clock } = await platform();
    const key = createPrivateKey(integration.privateKeyPem);
    const secret = 'Access denied for key arn:aws:kms:eu-west-1:111122223333:key/SECRET-DETAIL';
    class AccessDeniedException extends Error {
      override readonly name = 'AccessDeniedException';
    }
    // Signs the configuration's test signature, then the key service starts refusing: the boot's first assertion.
    let signed = 0;
    const signer: PlatformAuthSigner = {
      name: 'AwsKms',
      sign: (input) =>
        (signed += 1) === 1
          ? Promise.resolve(sign('sha256', input, key))
          : Promise.reject(new AccessDeniedException(secret)),
    };
    const { app, logger } = await createApp({
      ...integration.moduleOptions,
      key: { certificate: integration.certificatePem, signer },
      clock,
    });
    await app.init();
    expect(logger.messages('warn')).toEqual([
      'Start-up check: no token could be acquired; the application starts anyway. AssertionSigningError: the signer ' +
        '(AwsKms) failed to sign (AccessDeniedException); nothing was sent to the platform',
    ]);
    expect(emulator.counters.exchanges.total).toBe(0);
    expect(logOf(logger)).not.toContain('SECRET-DETAIL');
  });

  it('names an error that is not its own by its class only, never its message', async () => {
    const logger = new CapturingLogger();
    const foreign = new TypeError('connection string redis://user:hunter2@cache:6379 rejected');
    await runStartupCheck('warn', { getAccessToken: () => Promise.reject(foreign) }, logger);
    expect(logger.messages('warn')).toEqual([
      'Start-up check: no token could be acquired; the application starts anyway. TypeError (message not logged)',
    ]);
  });

  it('is shared by a fleet through the token store: two replicas booting together make one exchange', async () => {
    const setup = await startStorePlatform(track, { url: redis().url });
    const fleet = await startStoreFleet(track, { ...setup, shared: { ...setup.shared, startupCheck: 'warn' } }, 2, 1);
    expect(setup.platform.counters.exchanges.total).toBe(1);
    const tokens = tokensOf(await fleet.getAll());
    expect(new Set(tokens).size).toBe(1);
    expect(setup.platform.counters.exchanges.total).toBe(1);
    expect((await fleet.logs()).filter((line) => line.level === 'warn')).toEqual([]);
  });
});

describe("startupCheck: 'fail'", () => {
  it('makes app.listen() reject with the typed error when no token can be acquired (wrong machineId)', async () => {
    const { emulator, integration, clock } = await platform();
    const { app } = await createApp({
      ...integration.moduleOptions,
      clock,
      machineId: 'not-registered',
      startupCheck: 'fail',
    });
    const failure = await rejectionOf(app.listen(0, '127.0.0.1'));
    expect(failure).toBeInstanceOf(TokenExchangeError);
    expect(failure).toMatchObject({ reason: 'http_error', oauthError: 'invalid_client' });
    expect(emulator.counters.exchanges.rejected).toBe(1);
  });

  it('with a working integration has the token ready before the first request', async () => {
    const { emulator, integration, clock } = await platform();
    const { app } = await createApp({ ...integration.moduleOptions, clock, startupCheck: 'fail' });
    await app.init();
    expect(emulator.counters.exchanges.accepted).toBe(1);
    expect(app.get(TokenProvider).peekAccessToken()).toMatch(/\S/);
  });
});

describe("startupCheck: 'off'", () => {
  it('does not exchange at boot; the first call does', async () => {
    const { emulator, integration, clock } = await platform();
    const { app, logger } = await createApp({
      ...integration.moduleOptions,
      clock,
      machineId: 'not-registered',
      startupCheck: 'off',
    });
    await app.init();
    expect(emulator.counters.exchanges.total).toBe(0);
    expect(logger.messages('warn')).toEqual([]);
    await expect(app.get(TokenProvider).getAccessToken()).rejects.toBeInstanceOf(TokenExchangeError);
    expect(emulator.counters.exchanges.total).toBe(1);
  });
});
