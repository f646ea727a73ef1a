import { ConfigModule } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformHttpService,
  platformAuthConfig,
} from 'nestjs-platform-auth';
import { PlatformEmulator, createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { unknownVariableWarnings } from '../../lib/options/env-variables.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { restoreEnv } from '../support/environment.js';

let credentials: TestCredentials;
let platform: PlatformEmulator;
const saved = { ...process.env };

beforeAll(async () => {
  credentials = await createTestCredentials();
  platform = await PlatformEmulator.start();
});
afterAll(() => platform.close());
afterEach(() => restoreEnv(saved));

/** The required variables, for the default integration or under `prefix` (`PLATFORM_BILLING_`). */
function baseEnv(prefix = 'PLATFORM_'): Record<string, string> {
  return {
    [`${prefix}BASE_URL`]: 'https://platform.example.com',
    [`${prefix}MACHINE_ID`]: 'machine-1',
    [`${prefix}PRIVATE_KEY`]: credentials.privateKeyPem,
    [`${prefix}CERTIFICATE`]: credentials.certificatePem,
  };
}

/** The start-up problems of the environment's options, as `setting: message`. */
async function problems(env: Record<string, string>, integration?: string): Promise<string[]> {
  const error = await loadPlatformAuthConfig(
    readPlatformAuthEnv(env, integration),
    Date.now(),
    { integration },
    env,
  ).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PlatformAuthConfigError);
  return (error as PlatformAuthConfigError).problems.map((problem) => `${problem.setting}: ${problem.message}`);
}

describe("the variables of calls' retry policy, idempotency keys and rate limit", () => {
  it('fill the settings of the default integration', async () => {
    const options = readPlatformAuthEnv({
      ...baseEnv(),
      PLATFORM_CALL_RETRY_MAX_ATTEMPTS: '5',
      PLATFORM_CALL_RETRY_BASE_DELAY_MS: '50',
      PLATFORM_CALL_RETRY_MAX_DELAY_MS: '4000',
      PLATFORM_CALL_RETRY_BUDGET_PERCENT: '25',
      PLATFORM_CALL_RETRY_BUDGET_MIN_PER_MINUTE: '3',
      PLATFORM_IDEMPOTENCY_KEY_HEADER: 'X-Request-Key',
      PLATFORM_IDEMPOTENCY_KEY_METHODS: 'post, PATCH',
      PLATFORM_RATE_LIMIT_REQUESTS_PER_SECOND: '20',
      PLATFORM_RATE_LIMIT_BURST: '5',
      PLATFORM_RATE_LIMIT_MAX_WAIT_MS: '2500',
    });
    const config = await loadPlatformAuthConfig(options, Date.now());
    expect(config.callRetry).toEqual({
      maxAttempts: 5,
      baseDelayMs: 50,
      maxDelayMs: 4000,
      budgetPercent: 25,
      budgetMinPerMinute: 3,
    });
    expect(config.idempotencyKey).toEqual({ header: 'x-request-key', methods: new Set(['POST', 'PATCH']) });
    expect(config.rateLimit).toMatchObject({ maxWaitMs: 2500, shape: expect.objectContaining({ burst: 5 }) });
  });

  it("fill a named integration's settings from its own variables, not the default's", async () => {
    const env = {
      ...baseEnv('PLATFORM_BILLING_'),
      PLATFORM_CALL_RETRY_MAX_ATTEMPTS: '9',
      PLATFORM_BILLING_CALL_RETRY_MAX_ATTEMPTS: '2',
      PLATFORM_BILLING_IDEMPOTENCY_KEY: 'true',
      PLATFORM_BILLING_RATE_LIMIT_REQUESTS_PER_SECOND: '4',
      PLATFORM_BILLING_RATE_LIMIT_MAX_WAIT_MS: '750',
    };
    const config = await loadPlatformAuthConfig(readPlatformAuthEnv(env, 'billing'), Date.now(), {
      integration: 'billing',
    });
    expect(config.callRetry.maxAttempts).toBe(2);
    expect(config.idempotencyKey).toEqual({ header: 'idempotency-key', methods: new Set(['POST']) });
    expect(config.rateLimit?.maxWaitMs).toBe(750);
  });

  it('turn re-sends and keys off with false, and keys on with true', async () => {
    const off = await loadPlatformAuthConfig(
      readPlatformAuthEnv({ ...baseEnv(), PLATFORM_CALL_RETRY: 'false', PLATFORM_IDEMPOTENCY_KEY: 'false' }),
      Date.now(),
    );
    expect(off.callRetry.maxAttempts).toBe(1);
    expect(off.idempotencyKey.methods.size).toBe(0);
    const on = await loadPlatformAuthConfig(
      readPlatformAuthEnv({ ...baseEnv(), PLATFORM_IDEMPOTENCY_KEY: 'true', PLATFORM_CALL_RETRY: 'true' }),
      Date.now(),
    );
    expect(on.callRetry.maxAttempts).toBe(3);
    expect([...on.idempotencyKey.methods]).toEqual(['POST']);
  });

  it('refuse bad values at start-up, each naming its variable, every one at once', async () => {
    expect(
      await problems({
        ...baseEnv(),
        PLATFORM_CALL_RETRY_MAX_ATTEMPTS: '11',
        PLATFORM_CALL_RETRY_BASE_DELAY_MS: '1s',
        PLATFORM_IDEMPOTENCY_KEY_HEADER: 'Authorization',
        PLATFORM_IDEMPOTENCY_KEY_METHODS: 'POST;PATCH',
        PLATFORM_RATE_LIMIT_REQUESTS_PER_SECOND: '10',
        PLATFORM_RATE_LIMIT_MAX_WAIT_MS: 'soon',
      }),
    ).toEqual(
      expect.arrayContaining([
        'retry.maxAttempts (PLATFORM_CALL_RETRY_MAX_ATTEMPTS): must be a number from 1 to 10',
        "retry.baseDelayMs (PLATFORM_CALL_RETRY_BASE_DELAY_MS): must be a finite number, at least 0, got '1s'",
        'idempotencyKey.header (PLATFORM_IDEMPOTENCY_KEY_HEADER): must be a header name (letters, digits and -), not Authorization',
        "idempotencyKey.methods (PLATFORM_IDEMPOTENCY_KEY_METHODS): must be a list of HTTP methods, such as ['POST', 'PATCH']",
        expect.stringMatching(/^rateLimit\.maxWaitMs \(PLATFORM_RATE_LIMIT_MAX_WAIT_MS\): /),
      ]),
    );
    expect(
      await problems({ ...baseEnv(), PLATFORM_CALL_RETRY: 'sometimes', PLATFORM_IDEMPOTENCY_KEY: 'flase' }),
    ).toEqual(
      expect.arrayContaining([
        "retry (PLATFORM_CALL_RETRY): must be true, false or an object of its settings, got 'sometimes'",
        "idempotencyKey (PLATFORM_IDEMPOTENCY_KEY): must be true, false or an object of its settings, got 'flase'",
      ]),
    );
    expect(
      await problems({ ...baseEnv('PLATFORM_BILLING_'), PLATFORM_BILLING_CALL_RETRY_BUDGET_PERCENT: '150' }, 'billing'),
    ).toEqual(['retry.budgetPercent (PLATFORM_BILLING_CALL_RETRY_BUDGET_PERCENT): must be a number from 0 to 100']);
  });

  it('warn about the variables a false beside them leaves unread', async () => {
    const env = {
      ...baseEnv('PLATFORM_BILLING_'),
      PLATFORM_BILLING_CALL_RETRY: 'false',
      PLATFORM_BILLING_CALL_RETRY_MAX_ATTEMPTS: '5',
    };
    const config = await loadPlatformAuthConfig(
      readPlatformAuthEnv(env, 'billing'),
      Date.now(),
      {
        integration: 'billing',
      },
      env,
    );
    await config.credentials.key.close();
    expect(config.callRetry.maxAttempts).toBe(1);
    expect(config.warnings).toContainEqual({
      option: 'retry.maxAttempts',
      setting: 'retry.maxAttempts (PLATFORM_BILLING_CALL_RETRY_MAX_ATTEMPTS)',
      message: 'is not read: PLATFORM_BILLING_CALL_RETRY is false',
    });
  });

  it('are read by the one-line set-up: a POST keyed and re-sent once after a 503, with no code', async () => {
    const integration = await platform.createIntegration();
    Object.assign(process.env, integration.env, {
      PLATFORM_STARTUP_CHECK: 'off',
      PLATFORM_IDEMPOTENCY_KEY: 'true',
      PLATFORM_CALL_RETRY_MAX_ATTEMPTS: '2',
    });
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
      ],
    }).compile();
    try {
      const http = moduleRef.get(PlatformHttpService);
      platform.resetCounters();
      for (let i = 0; i < 3; i += 1) platform.injectFault({ kind: 'status', status: 503 }, 'api');
      const refused = await firstValueFrom(http.post('/api/messages', { text: 'a' }, { validateStatus: () => true }));
      expect(refused.status).toBe(503);
      expect(platform.counters.apiCalls.total).toBe(2);
      const sent = await firstValueFrom(http.post('/api/messages', { text: 'b' }, { validateStatus: () => true }));
      expect(sent.status).toBe(202);
      expect(platform.counters.apiCalls.total).toBe(4);
      expect(platform.counters.idempotency.keys).toBe(1);
    } finally {
      await moduleRef.close();
    }
  });
});

describe('the typo check of the new variables', () => {
  it('knows them, for every integration, and suggests them for near misses', () => {
    const known = {
      PLATFORM_CALL_RETRY: 'false',
      PLATFORM_BILLING_CALL_RETRY_BUDGET_MIN_PER_MINUTE: '1',
      PLATFORM_IDEMPOTENCY_KEY_METHODS: 'POST',
      PLATFORM_RATE_LIMIT_BURST: '2',
    };
    expect(unknownVariableWarnings(known)).toEqual([]);
    const misses = {
      PLATFORM_CALL_RETRY_MAXATTEMPTS: '5',
      PLATFORM_BILLING_IDEMPOTENCY_KEY_METHOD: 'POST',
      PLATFORM_RATE_LIMIT_MAX_WAIT: '10',
    };
    expect(unknownVariableWarnings(misses).map((warning) => warning.message)).toEqual([
      'is not a variable this package reads; did you mean PLATFORM_BILLING_IDEMPOTENCY_KEY_METHODS?',
      'is not a variable this package reads; did you mean PLATFORM_CALL_RETRY_MAX_ATTEMPTS?',
      'is not a variable this package reads; did you mean PLATFORM_RATE_LIMIT_MAX_WAIT_MS?',
    ]);
  });
});
