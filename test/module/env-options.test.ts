import { ConfigModule, type ConfigType } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import {
  AssertionSigner,
  PlatformAuthConfigError,
  PlatformAuthModule,
  TokenProvider,
  platformAuthConfig,
} from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { startLoopbackServer } from '../support/loopback-server.js';

let credentials: TestCredentials;
const saved = { ...process.env };

beforeAll(async () => {
  credentials = await createTestCredentials();
});

afterEach(() => {
  for (const name of Object.keys(process.env)) if (name.startsWith('PLATFORM_')) delete process.env[name];
  Object.assign(process.env, saved);
});

function baseEnv(): Record<string, string> {
  return {
    PLATFORM_BASE_URL: 'https://platform.example.com',
    PLATFORM_MACHINE_ID: 'machine-1',
    PLATFORM_PRIVATE_KEY: credentials.privateKeyPem,
    PLATFORM_CERTIFICATE: credentials.certificatePem,
  };
}

describe('production options from the environment', () => {
  it('parses numbers, booleans and comma lists into the options they fill', async () => {
    const options = readPlatformAuthEnv({
      ...baseEnv(),
      PLATFORM_CORRECT_CLOCK_SKEW: 'true',
      PLATFORM_CLOCK_MARGIN_SECONDS: '90',
      PLATFORM_STARTUP_CHECK: 'fail',
      PLATFORM_EXCHANGE_TIMEOUT_MS: '2500',
      PLATFORM_RETRY_MAX_TOTAL_MS: '8000',
      PLATFORM_REFRESH_BEFORE_EXPIRY_SECONDS: '30',
      PLATFORM_ALLOWED_ORIGINS: 'https://files.example.com, https://cdn.example.com,',
    });
    expect(options).toMatchObject({
      correctClockSkew: true,
      clockMarginSeconds: 90,
      startupCheck: 'fail',
      exchange: { timeoutMs: 2500, retry: { maxTotalMs: 8000 } },
      refreshBeforeExpirySeconds: 30,
      allowedOrigins: ['https://files.example.com', 'https://cdn.example.com'],
    });
    const config = await loadPlatformAuthConfig(options, Date.now());
    expect([...config.allowedOrigins]).toEqual([
      'https://platform.example.com',
      'https://files.example.com',
      'https://cdn.example.com',
    ]);
    expect(config).toMatchObject({ correctClockSkew: true, clockMarginSeconds: 90, exchangeTimeoutMs: 2500 });
    expect(config.retry.maxTotalMs).toBe(8000);
  });

  it('refuses a bad value at start-up naming the variable and the value, every one at once', async () => {
    Object.assign(process.env, baseEnv(), {
      PLATFORM_CORRECT_CLOCK_SKEW: 'flase',
      PLATFORM_EXCHANGE_TIMEOUT_MS: '10s',
      PLATFORM_CLOCK_MARGIN_SECONDS: '600',
      PLATFORM_STARTUP_CHECK: 'always',
    });
    const build = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
      ],
    }).compile();
    const error = await build.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(PlatformAuthConfigError);
    expect(
      (error as PlatformAuthConfigError).problems.map((problem) => `${problem.setting}: ${problem.message}`),
    ).toEqual(
      expect.arrayContaining([
        "exchange.timeoutMs (PLATFORM_EXCHANGE_TIMEOUT_MS): must be a finite number, at least 1, got '10s'",
        "correctClockSkew (PLATFORM_CORRECT_CLOCK_SKEW): must be true or false, got 'flase'",
        'clockMarginSeconds (PLATFORM_CLOCK_MARGIN_SECONDS): must be a number of seconds from 0 to 120',
        "startupCheck (PLATFORM_STARTUP_CHECK): must be 'off', 'warn' or 'fail', got 'always'",
      ]),
    );
  });

  it('refuses a base URL with a path, saying to remove it', async () => {
    const options = readPlatformAuthEnv({ ...baseEnv(), PLATFORM_BASE_URL: 'https://platform.example.com/api' });
    await expect(loadPlatformAuthConfig(options, Date.now())).rejects.toThrow(
      /baseUrl \(PLATFORM_BASE_URL\): has the path '\/api'; remove the path/,
    );
    const root = readPlatformAuthEnv({ ...baseEnv(), PLATFORM_BASE_URL: 'https://platform.example.com/' });
    expect((await loadPlatformAuthConfig(root, Date.now())).tokenUrl).toBe(
      'https://platform.example.com/loginservice/connect/token',
    );
  });

  it('overrides one option on top of platformAuthConfig as the README shows', async () => {
    // A token endpoint that never answers: the timeout the exchange reports is the one that applied.
    const silent = await startLoopbackServer(() => undefined);
    Object.assign(process.env, baseEnv(), {
      PLATFORM_BASE_URL: silent.url,
      PLATFORM_EXCHANGE_TIMEOUT_MS: '60000',
      PLATFORM_RETRY_MAX_TOTAL_MS: '0',
    });
    // README "Overriding one option": the environment's options, one of them replaced in code.
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync({
          imports: [ConfigModule.forFeature(platformAuthConfig)],
          inject: [platformAuthConfig.KEY],
          useFactory: (env: ConfigType<typeof platformAuthConfig>) => ({
            ...env,
            exchange: { ...env.exchange, timeoutMs: 300 },
          }),
        }),
      ],
    }).compile();
    try {
      const tokens = moduleRef.get(TokenProvider);
      await expect(tokens.getAccessToken()).rejects.toMatchObject({
        reason: 'timeout',
        summary: 'token endpoint did not answer within 300 ms',
      });
      const claims = decodeJwt(await moduleRef.get(AssertionSigner).createAssertion());
      expect(claims.sub).toBe('machine-1');
    } finally {
      await moduleRef.close();
      await silent.close();
    }
  });
});
