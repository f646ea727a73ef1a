import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider, platformAuthConfig, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { PLATFORM_AUTH_MODULE_OPTIONS } from '../../lib/platform-auth.module-definition.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { useCleanup } from '../support/cleanup.js';
import { renderReachable } from '../support/reachable-rendering.js';
import { useRedisServer } from '../support/redis-server.js';
import { restoreEnv } from '../support/environment.js';

const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const redis = useRedisServer({ args: ['--requirepass', PASSWORD], password: PASSWORD });
const track = useCleanup();

/** The store's secrets in every form a dump could show them: text, and the key's bytes as hex, base64 and numbers. */
function renderingsOf(key: Buffer): string[] {
  const head = key.subarray(0, 8);
  return [
    PASSWORD,
    key.toString('base64'),
    key.toString('hex'),
    key.toString('base64url'),
    [...head].join(', '),
    [...head].map((byte) => byte.toString(16).padStart(2, '0')).join(' '),
  ];
}

function expectNone(rendering: string, secrets: readonly string[], where: string): void {
  for (const secret of secrets) expect(rendering.includes(secret), `${where} shows ${secret.slice(0, 6)}…`).toBe(false);
}

/** The whole container as a debug dump would show it, deep enough to reach every provider's parts and their parts. */
function renderContainer(moduleRef: TestingModule): string {
  return renderReachable(moduleRef, 10);
}

/** Every way an app (or a debug endpoint) commonly dumps what the container holds. */
function dumpsOf(value: unknown): string[] {
  return [
    inspect(value, { depth: Infinity, showHidden: true, getters: true }),
    JSON.stringify(value) ?? '',
    String((value as { tokenStore?: { password?: unknown } } | undefined)?.tokenStore?.password),
    String((value as { tokenStore?: { encryptionKey?: unknown } } | undefined)?.tokenStore?.encryptionKey),
    String((value as { tokenStore?: { url?: unknown } } | undefined)?.tokenStore?.url),
  ];
}

async function started(moduleRef: TestingModule): Promise<TokenProvider> {
  await moduleRef.init();
  track(moduleRef);
  const tokens = moduleRef.get(TokenProvider);
  await tokens.getAccessToken();
  return tokens;
}

describe('the store password and encryption key after start-up', () => {
  it('forRoot with options: not in the container, the options provider, or a log line', async () => {
    const clock = new FakeClock(Date.now());
    const emulator = track(await PlatformEmulator.start({ now: () => clock.now() }));
    const integration = await emulator.createIntegration();
    const key = randomBytes(32);
    const logger = new CapturingLogger();
    const options: PlatformAuthOptions = {
      ...integration.moduleOptions,
      clock,
      logger,
      tokenStore: { url: `redis://:${PASSWORD}@127.0.0.1:${redis().port}`, encryptionKey: key.toString('base64') },
    };
    const moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(options)] }).compile();
    const tokens = await started(moduleRef);
    expect(tokens.status().sharedStore?.state).toBe('shared');

    const secrets = renderingsOf(key);
    expectNone(renderContainer(moduleRef), secrets, 'inspect(moduleRef)');
    for (const dump of dumpsOf(moduleRef.get(PLATFORM_AUTH_MODULE_OPTIONS)))
      expectNone(dump, secrets, 'the options provider');
    expectNone(JSON.stringify(tokens.status()), secrets, 'status()');
    expectNone(logger.lines.map((line) => line.message).join('\n'), secrets, 'the log');
  });

  it('platformAuthConfig from the environment: not through ConfigService either', async () => {
    const clock = new FakeClock(Date.now());
    const emulator = track(await PlatformEmulator.start({ now: () => clock.now() }));
    const integration = await emulator.createIntegration();
    const key = randomBytes(32);
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: integration.moduleOptions.baseUrl,
      PLATFORM_MACHINE_ID: integration.machineId,
      PLATFORM_PRIVATE_KEY: integration.privateKeyPem,
      PLATFORM_CERTIFICATE: integration.certificatePem,
      PLATFORM_TOKEN_STORE_URL: `redis://:${PASSWORD}@127.0.0.1:${redis().port}`,
      PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: key.toString('hex'),
    });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ConfigModule.forRoot({ ignoreEnvFile: true }),
          PlatformAuthModule.forRootAsync({
            imports: [ConfigModule.forFeature(platformAuthConfig)],
            inject: [platformAuthConfig.KEY],
            useFactory: (config: PlatformAuthOptions) => ({ ...config, clock, logger: new CapturingLogger() }),
          }),
        ],
      }).compile();
      const tokens = await started(moduleRef);
      expect(tokens.status().sharedStore?.state).toBe('shared');

      const secrets = renderingsOf(key);
      expectNone(renderContainer(moduleRef), secrets, 'inspect(moduleRef)');
      for (const dump of dumpsOf(moduleRef.get(PLATFORM_AUTH_MODULE_OPTIONS)))
        expectNone(dump, secrets, 'the options provider');
      const config = moduleRef.get(ConfigService);
      for (const dump of dumpsOf(config.get('platformAuth'))) expectNone(dump, secrets, "ConfigService 'platformAuth'");
      expectNone(String(config.get('platformAuth.tokenStore.url')), secrets, 'ConfigService tokenStore.url');
      expectNone(
        String(config.get('platformAuth.tokenStore.encryptionKey')),
        secrets,
        'ConfigService tokenStore.encryptionKey',
      );
    } finally {
      restoreEnv(saved);
    }
  });
});
