import { hkdfSync } from 'node:crypto';
import { inspect } from 'node:util';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { PlatformUserAuth, PlatformUserAuthModule, platformUserAuthConfig } from 'nestjs-platform-auth/user';
import { PLATFORM_USER_AUTH_MODULE_OPTIONS } from '../../lib/user/platform-user-auth.module-definition.js';
import { useCleanup } from '../support/cleanup.js';
import { renderReachable } from '../support/reachable-rendering.js';
import { restoreEnv } from './user-test-kit.js';

const STATE_SECRET = 'pV8rQ2mZt6Lw1Xc9Hb4Ny7Ks3Fd5Ja0Ge';
const CLIENT_SECRET = 'client-secret-Hq7Wm2Zp9Lx4Rt6Vb1Nc';
const track = useCleanup();

/** The state secret, the client secret and the two keys derived from the state secret, in every form a dump shows. */
function renderings(): string[] {
  const derived = ['transaction', 'session'].map((purpose) =>
    Buffer.from(
      hkdfSync('sha256', Buffer.from(STATE_SECRET), new Uint8Array(0), `nestjs-platform-auth user ${purpose} v1`, 32),
    ),
  );
  return [
    STATE_SECRET,
    CLIENT_SECRET,
    Buffer.from(STATE_SECRET).toString('base64'),
    ...derived.flatMap((key) => [
      key.toString('base64'),
      key.toString('base64url'),
      key.toString('hex'),
      [...key.subarray(0, 8)].join(', '),
      [...key.subarray(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join(' '),
    ]),
  ];
}

function expectNone(rendering: string, where: string): void {
  for (const secret of renderings())
    expect(rendering.includes(secret), `${where} shows ${secret.slice(0, 6)}…`).toBe(false);
}

function dumpsOf(value: unknown): string[] {
  const fields = value as { stateSecret?: unknown; clientSecret?: unknown } | undefined;
  return [
    inspect(value, { depth: Infinity, showHidden: true, getters: true }),
    JSON.stringify(value) ?? '',
    String(fields?.stateSecret),
    String(fields?.clientSecret),
  ];
}

async function started(moduleRef: TestingModule): Promise<void> {
  await moduleRef.init();
  track(moduleRef);
  // The module works: the secrets were read at start-up.
  const { url } = await moduleRef.get(PlatformUserAuth).createAuthorizationRequest();
  expect(url).toMatch(/^https:\/\/platform\.example\.com\//);
}

describe('the state secret and the client secret after start-up', () => {
  it('forRoot with options: not in the container or the options provider', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformUserAuthModule.forRoot({
          baseUrl: 'https://platform.example.com',
          clientId: 'web-app',
          redirectUri: 'https://app.example.com/callback',
          stateSecret: STATE_SECRET,
          clientAuthentication: 'client_secret_basic',
          clientSecret: CLIENT_SECRET,
        }),
      ],
    }).compile();
    await started(moduleRef);
    expectNone(renderReachable(moduleRef, 12), 'inspect(moduleRef)');
    for (const dump of dumpsOf(moduleRef.get(PLATFORM_USER_AUTH_MODULE_OPTIONS)))
      expectNone(dump, 'the options provider');
  });

  it('platformUserAuthConfig from the environment: not through ConfigService either', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: 'https://platform.example.com',
      PLATFORM_USER_CLIENT_ID: 'web-app',
      PLATFORM_USER_REDIRECT_URI: 'https://app.example.com/callback',
      PLATFORM_USER_STATE_SECRET: STATE_SECRET,
      PLATFORM_USER_CLIENT_AUTH: 'client_secret_post',
      PLATFORM_USER_CLIENT_SECRET: CLIENT_SECRET,
    });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ConfigModule.forRoot({ ignoreEnvFile: true }),
          PlatformUserAuthModule.forRootAsync({
            imports: [ConfigModule.forFeature(platformUserAuthConfig)],
            inject: [platformUserAuthConfig.KEY],
            useFactory: (config: ReturnType<typeof platformUserAuthConfig>) => config,
          }),
        ],
      }).compile();
      await started(moduleRef);
      expectNone(renderReachable(moduleRef, 12), 'inspect(moduleRef)');
      for (const dump of dumpsOf(moduleRef.get(PLATFORM_USER_AUTH_MODULE_OPTIONS)))
        expectNone(dump, 'the options provider');
      const config = moduleRef.get(ConfigService);
      for (const dump of dumpsOf(config.get('platformUserAuth'))) expectNone(dump, "ConfigService 'platformUserAuth'");
      expectNone(String(config.get('platformUserAuth.stateSecret')), 'ConfigService stateSecret');
      expectNone(String(config.get('platformUserAuth.clientSecret')), 'ConfigService clientSecret');
    } finally {
      restoreEnv(saved);
    }
  });
});
