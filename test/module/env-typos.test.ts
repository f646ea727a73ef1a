import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, platformAuthConfig, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformOutboxModule } from 'nestjs-platform-auth/outbox';
import { PlatformUserAuthModule, platformUserAuthConfig } from 'nestjs-platform-auth/user';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { restoreEnv } from '../support/environment.js';

let credentials: TestCredentials;
const saved = { ...process.env };

beforeAll(async () => {
  credentials = await createTestCredentials();
});

afterEach(() => restoreEnv(saved));

/** A value no message may repeat: typos are reported by name only. */
const VALUE = 'value-that-must-not-be-printed';

function machineEnv(): Record<string, string> {
  return {
    PLATFORM_BASE_URL: 'https://platform.example.com',
    PLATFORM_MACHINE_ID: 'machine-1',
    PLATFORM_PRIVATE_KEY: credentials.privateKeyPem,
    PLATFORM_CERTIFICATE: credentials.certificatePem,
  };
}

/**
 * The app's start-up as the README sets it up: ConfigModule, platformAuthConfig, the module's logger captured; with
 * `imports` beside them.
 */
async function startUp(logger: CapturingLogger, imports: (DynamicModule | Type)[] = []): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...imports,
      ConfigModule.forRoot({ ignoreEnvFile: true }),
      PlatformAuthModule.forRootAsync({
        imports: [ConfigModule.forFeature(platformAuthConfig)],
        inject: [platformAuthConfig.KEY],
        useFactory: (config: PlatformAuthOptions) => ({ ...config, logger }),
      }),
    ],
  }).compile();
  await moduleRef.close();
}

async function startUpError(): Promise<Error> {
  const failure = Test.createTestingModule({
    imports: [
      ConfigModule.forRoot({ ignoreEnvFile: true }),
      PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
    ],
  }).compile();
  return failure.then(
    () => {
      throw new Error('start-up succeeded');
    },
    (error: unknown) => error as Error,
  );
}

describe('PLATFORM_* variables the package does not read', () => {
  it('warns at start-up naming the closest known variable, never the value', async () => {
    Object.assign(process.env, machineEnv(), {
      PLATFORM_STARTUPCHECK: VALUE,
      PLATFORM_EXCHANGE_TIMEOUT: VALUE,
      PLATFORM_BILLING_MACHNE_ID: VALUE,
      PLATFORM_ENTIRELY_UNRELATED_THING: VALUE,
    });
    const logger = new CapturingLogger();
    await startUp(logger);
    const warnings = logger.messages('warn');
    expect(warnings).toEqual(
      expect.arrayContaining([
        'PLATFORM_STARTUPCHECK: is not a variable this package reads; did you mean PLATFORM_STARTUP_CHECK?',
        'PLATFORM_EXCHANGE_TIMEOUT: is not a variable this package reads; did you mean PLATFORM_EXCHANGE_TIMEOUT_MS?',
        'PLATFORM_BILLING_MACHNE_ID: is not a variable this package reads; did you mean PLATFORM_BILLING_MACHINE_ID?',
        'PLATFORM_ENTIRELY_UNRELATED_THING: is not a variable this package reads',
      ]),
    );
    expect(logger.lines.map((line) => line.message).join('\n')).not.toContain(VALUE);
  });

  it("is quiet about every variable some part reads: a named integration's, user sign-in's, an add-on's", async () => {
    Object.assign(process.env, machineEnv(), {
      PLATFORM_STARTUP_CHECK: 'off',
      PLATFORM_BILLING_MACHINE_ID: 'billing-1',
      PLATFORM_BILLING_TOKEN_STORE_URL: 'redis://127.0.0.1:1',
      PLATFORM_USER_CLIENT_ID: 'web-app',
      PLATFORM_OUTBOX_REDIS_URL: 'redis://127.0.0.1:1',
      PLATFORM_OUTBOX_RETRY_ATTEMPTS: '3',
    });
    // The outbox's module declares its variables to the application's modules (PlatformAuthModule.readsVariables).
    const logger = new CapturingLogger();
    await startUp(logger, [PlatformOutboxModule.forRoot({ worker: false })]);
    expect(logger.messages('warn')).toEqual([]);
    // Without it no part of the application reads them.
    const alone = new CapturingLogger();
    await startUp(alone);
    expect(alone.messages('warn')).toEqual([
      'PLATFORM_OUTBOX_REDIS_URL: is not a variable this package reads',
      'PLATFORM_OUTBOX_RETRY_ATTEMPTS: is not a variable this package reads',
    ]);
  });

  it('is quiet about the variables a module built on the package declares it reads, in that application only', async () => {
    Object.assign(process.env, machineEnv(), { PLATFORM_QUEUE_REDIS_URL: 'redis://127.0.0.1:1' });
    @Module({ providers: [PlatformAuthModule.readsVariables(['PLATFORM_QUEUE_REDIS_URL'])] })
    class AddOnModule {}
    const logger = new CapturingLogger();
    await startUp(logger, [AddOnModule]);
    expect(logger.messages('warn')).toEqual([]);
    const alone = new CapturingLogger();
    await startUp(alone);
    expect(alone.messages('warn')).toEqual(['PLATFORM_QUEUE_REDIS_URL: is not a variable this package reads']);
  });

  it('names a near-miss that is set when a required variable is missing', async () => {
    const { PLATFORM_MACHINE_ID: _unset, ...env } = machineEnv();
    Object.assign(process.env, env, { PLATFORM_MACHINEID: VALUE });
    const error = await startUpError();
    expect(error.message).toContain(
      'machineId (PLATFORM_MACHINE_ID): is required (the machineId shown in the portal; it becomes sub); PLATFORM_MACHINEID is set — did you mean PLATFORM_MACHINE_ID?',
    );
    expect(error.message).not.toContain(VALUE);
  });

  it("does the same for user sign-in's variables", async () => {
    Object.assign(process.env, {
      PLATFORM_BASE_URL: 'https://platform.example.com',
      PLATFORM_USER_CLIENTID: VALUE,
      PLATFORM_USER_REDIRECT_URI: 'http://localhost:3000/callback',
      PLATFORM_USER_STATE_SECRET: 'kX9#mQ2$vL7@pR4!nT8&wZ3*bY6^cF1%',
    });
    const failure = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider()),
      ],
    }).compile();
    const error = await failure.then(
      () => new Error('start-up succeeded'),
      (reason: unknown) => reason as Error,
    );
    expect(error.message).toContain('PLATFORM_USER_CLIENTID is set — did you mean PLATFORM_USER_CLIENT_ID?');
    expect(error.message).not.toContain(VALUE);
  });
});
