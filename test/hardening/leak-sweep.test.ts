import { constants, createPrivateKey, randomBytes, sign } from 'node:crypto';
import { ConsoleLogger, Controller, Get, Module } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AssertionSigningError,
  PlatformAuthConfigError,
  PlatformHttpService,
  PlatformUnavailableError,
  PlatformAuthModule,
  TokenProvider,
} from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { SignerAssertionKey } from '../../lib/credentials/signer.assertion-key.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { captureOutput } from '../support/capture-output.js';
import { TEST_PASSPHRASE } from '../support/credential-variants.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { eventually } from '../support/eventually.js';
import { RedisServer } from '../support/redis-server.js';

/**
 * The logs a real app writes on the error paths — Nest's bootstrap failure report, its exception handler for an
 * unhandled error in a controller, our background-renewal warnings — searched for every secret.
 */
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration();
});
afterAll(() => platform.close());

function secrets(...more: string[]): string[] {
  const pemLines = [integration.privateKeyPem, integration.certificatePem].flatMap((pem) =>
    pem
      .split('\n')
      .filter((line) => line.length >= 40 && !line.startsWith('-----'))
      .slice(0, 5),
  );
  return [...pemLines, TEST_PASSPHRASE, ...more];
}

function expectClean(output: string, needles: string[]): void {
  expect(output.length).toBeGreaterThan(0);
  for (const needle of needles) expect(output.includes(needle), `leaked ${needle.slice(0, 6)}…`).toBe(false);
}

@Controller()
class ProxyController {
  constructor(private readonly http: HttpService) {}

  @Get('billing')
  async billing(): Promise<unknown> {
    return (await firstValueFrom(this.http.get('/api/billing'))).data;
  }
}

describe('leak sweep over logs', () => {
  it('Nest bootstrap failure with a wrong passphrase logs no key material or passphrase', async () => {
    const encrypted = createPrivateKey(integration.privateKeyPem)
      .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: TEST_PASSPHRASE })
      .toString();
    @Module({
      imports: [
        PlatformAuthModule.forRoot({
          ...integration.moduleOptions,
          key: { ...integration.moduleOptions.key, privateKey: encrypted, passphrase: `${TEST_PASSPHRASE}!` },
        }),
      ],
    })
    class BrokenApp {}
    let failure: unknown;
    const output = await captureOutput(async () => {
      failure = await NestFactory.create(BrokenApp, { logger: new ConsoleLogger(), abortOnError: false }).catch(
        (e: unknown) => e,
      );
    });
    expect(String(failure)).toMatch(/wrong passphrase/);
    const encryptedLines = encrypted.split('\n').filter((l) => l.length >= 40 && !l.startsWith('-----'));
    expectClean(output, [...secrets(`${TEST_PASSPHRASE}!`), ...encryptedLines]);
    expectNoSecrets(failure, [...secrets(`${TEST_PASSPHRASE}!`), ...encryptedLines]);
  });

  it('an unhandled 401 in a controller is logged by Nest without the token', async () => {
    @Module({ imports: [PlatformAuthModule.forRoot(integration.moduleOptions)], controllers: [ProxyController] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .setLogger(new ConsoleLogger({ logLevels: ['warn', 'error', 'fatal'] }))
      .compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    try {
      const token = await app.get(TokenProvider).getAccessToken();
      platform.injectFault({ kind: 'status', status: 401 }, 'api');
      platform.injectFault({ kind: 'status', status: 401 }, 'api');
      const output = await captureOutput(() => request(app.getHttpServer()).get('/billing').expect(500));
      const renewed = await app.get(TokenProvider).getAccessToken();
      expect(output).toMatch(/Request failed with status code 401/);
      expectClean(output, secrets(token, renewed));
    } finally {
      await app.close();
    }
  });

  it('a PlatformUnavailableError shows neither the token nor the query string', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(integration.moduleOptions)],
    }).compile();
    await moduleRef.init();
    try {
      const token = await moduleRef.get(TokenProvider).getAccessToken();
      platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '3600' } }, 'api');
      const http = moduleRef.get(PlatformHttpService);
      const error: unknown = await firstValueFrom(http.get(`/api/billing?echo=${token}`)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PlatformUnavailableError);
      expectNoSecrets(error, secrets(token));
    } finally {
      await moduleRef.close();
    }
  });

  it('background renewal failures are logged without the token', async () => {
    const clock = new FakeClock(Date.now(), { autoAdvance: true });
    const skewed = await PlatformEmulator.start({ now: () => clock.now() });
    const skewedIntegration = await skewed.createIntegration();
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          ...skewedIntegration.moduleOptions,
          clock,
          exchange: { retry: { maxAttempts: 2 } },
        }),
      ],
    })
      .setLogger(new ConsoleLogger({ logLevels: ['warn', 'error', 'fatal'] }))
      .compile();
    await moduleRef.init();
    try {
      const tokens = moduleRef.get(TokenProvider);
      const token = await tokens.getAccessToken();
      clock.advance(550_000);
      skewed.setIntegrationStatus(skewedIntegration.machineId, 'Suspended');
      const output = await captureOutput(async () => {
        expect(await tokens.getAccessToken()).toBe(token);
        await eventually(() => expect(skewed.counters.exchanges.rejected).toBe(1));
        await new Promise((resolve) => setImmediate(resolve));
      });
      expect(output).toMatch(/Background token renewal failed/);
      expectClean(output, secrets(token));
    } finally {
      await moduleRef.close();
      await skewed.close();
    }
  });
  it('store settings refused at start-up, and a Redis that refuses the password, are logged without the password or key', async () => {
    const password = `store-${randomBytes(12).toString('hex')}`;
    const key = randomBytes(32).toString('base64');
    const redis = await RedisServer.start({
      args: ['--requirepass', `${password}-right`],
      password: `${password}-right`,
    });
    try {
      @Module({
        imports: [
          PlatformAuthModule.forRoot({
            ...integration.moduleOptions,
            tokenStore: {
              clusterNodes: [`redis://app:${password}@127.0.0.1:${redis.port}`],
              password,
              username: 'app',
              encryptionKey: key,
              tls: { certPath: '/no/such/client.crt' },
            },
          }),
        ],
      })
      class BrokenApp {}
      let failure: unknown;
      const refused = await captureOutput(async () => {
        failure = await NestFactory.create(BrokenApp, { logger: new ConsoleLogger(), abortOnError: false }).catch(
          (e: unknown) => e,
        );
      });
      expect(String(failure)).toMatch(
        /tokenStore.clusterNodes \(PLATFORM_TOKEN_STORE_CLUSTER_NODES\): holds credentials/,
      );
      expectClean(refused, secrets(password, key));
      expectNoSecrets(failure, secrets(password, key));

      const builder = Test.createTestingModule({
        imports: [
          PlatformAuthModule.forRoot({
            ...integration.moduleOptions,
            tokenStore: { url: `redis://:${password}@127.0.0.1:${redis.port}`, encryptionKey: key },
          }),
        ],
      }).setLogger(new ConsoleLogger({ logLevels: ['log', 'warn', 'error', 'fatal'] }));
      const output = await captureOutput(async () => {
        const moduleRef = await builder.compile();
        await moduleRef.init();
        await moduleRef.get(TokenProvider).getAccessToken();
        await moduleRef.close();
      });
      expect(output).toMatch(/Token store unavailable \(WRONGPASS\)/);
      expectClean(output, secrets(password, key));
    } finally {
      await redis.stop();
    }
  });
});

describe('leak sweep over the next pair', () => {
  it('a next key with a wrong passphrase, and a switch to the next pair, are logged without key, passphrase or token', async () => {
    const { createTestCredentials } = await import('nestjs-platform-auth/testing');
    const next = await createTestCredentials();
    const nextEncrypted = createPrivateKey(next.privateKeyPem)
      .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: TEST_PASSPHRASE })
      .toString();
    const nextLines = [next.privateKeyPem, nextEncrypted].flatMap((pem) =>
      pem.split('\n').filter((line) => line.length >= 40 && !line.startsWith('-----')),
    );
    @Module({
      imports: [
        PlatformAuthModule.forRoot({
          ...integration.moduleOptions,
          next: { privateKey: nextEncrypted, certificate: next.certificatePem, passphrase: `${TEST_PASSPHRASE}!` },
        }),
      ],
    })
    class BrokenApp {}
    let failure: unknown;
    const refused = await captureOutput(async () => {
      failure = await NestFactory.create(BrokenApp, { logger: new ConsoleLogger(), abortOnError: false }).catch(
        (e: unknown) => e,
      );
    });
    expect(String(failure)).toMatch(/does not decrypt the key in next\.privateKey: wrong passphrase/);
    expectClean(refused, [...secrets(`${TEST_PASSPHRASE}!`), ...nextLines]);
    expectNoSecrets(failure, [...secrets(`${TEST_PASSPHRASE}!`), ...nextLines]);

    const own = await platform.createIntegration();
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          ...own.moduleOptions,
          next: { privateKey: next.privateKeyPem, certificate: next.certificatePem },
        }),
      ],
    })
      .setLogger(new ConsoleLogger({ logLevels: ['warn', 'error', 'fatal'] }))
      .compile();
    await moduleRef.init();
    try {
      const tokens = moduleRef.get(TokenProvider);
      const first = await tokens.getAccessToken();
      platform.replaceCertificate(own.machineId, next.certificatePem);
      tokens.invalidate(first);
      let renewed = '';
      const output = await captureOutput(async () => {
        renewed = await tokens.getAccessToken();
      });
      expect(output).toMatch(/as not registered and accepted the next one/);
      const needles = [...secrets(first, renewed), ...nextLines];
      expectClean(output, needles);
      expectNoSecrets(tokens.status(), needles);
    } finally {
      await moduleRef.close();
    }
  });
});

describe('leak sweep over key-custody errors', () => {
  const PIN = 'pin-value-7f3e9a';

  it('a refused pkcs11: URI names no PIN in any rendering of the start-up error', async () => {
    const error = await loadPlatformAuthConfig(
      {
        ...integration.moduleOptions,
        key: {
          certificate: integration.certificatePem,
          privateKeyUri: `pkcs11:token=t;object=k?module-path=/nonexistent/libp11.so&pin-value=${PIN}`,
        },
      },
      Date.now(),
    ).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PlatformAuthConfigError);
    expectNoSecrets(error, [PIN, `pin-value=${PIN}`]);
  });

  it('a signer whose signature fails the check, or that throws, leaks neither the assertion nor its own message', async () => {
    const key = createPrivateKey(integration.privateKeyPem);
    const config = await loadPlatformAuthConfig(
      {
        ...integration.moduleOptions,
        key: {
          certificate: integration.certificatePem,
          signer: { sign: (input) => Promise.resolve(sign('sha256', input, key)) },
        },
      },
      Date.now(),
    );
    const seen: string[] = [];
    const pss = (input: Uint8Array) => {
      seen.push(Buffer.from(input).toString());
      return Promise.resolve(sign('sha256', input, { key, padding: constants.RSA_PKCS1_PSS_PADDING }));
    };
    const refused = await new SignerAssertionKey({ sign: pss }, config.credentials.key.publicKey)
      .sign(new TextEncoder().encode('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJtYWNoaW5lIn0'))
      .catch((caught: unknown) => caught);
    expect(refused).toMatchObject({ reason: 'bad-signature', fault: 'pss' });
    expect(refused).toBeInstanceOf(AssertionSigningError);
    const secretMessage = 'kms said: token=abc.def.ghi';
    const thrown = await new SignerAssertionKey(
      { sign: () => Promise.reject(new Error(secretMessage)) },
      config.credentials.key.publicKey,
    )
      .sign(new Uint8Array(8))
      .catch((caught: unknown) => caught);
    expect(thrown).toMatchObject({ reason: 'failed', detail: 'Error' });
    expect(thrown).toBeInstanceOf(AssertionSigningError);
    expectNoSecrets(refused, [...seen, ...secrets()]);
    expectNoSecrets(thrown, [secretMessage, ...secrets()]);
    await config.credentials.key.close();
  });
});

describe('leak sweep over user sign-in errors', () => {
  it("start-up errors of user sign-in's confidential clients name no secret, passphrase or key text", async () => {
    const { PlatformUserAuthModule } = await import('nestjs-platform-auth/user');
    const clientSecret = 'user-client-secret-Vq8Lm3';
    const stateSecret = 'Lw2xQ9vB4nR7tY1kZ6mC3pH8sJ5dF0gA';
    const configs = [
      // A secret where the method takes none, and discovery at a server that is not there.
      { clientSecret, discovery: true, issuer: 'http://127.0.0.1:9' },
      // private_key_jwt with a key that does not parse and a wrong passphrase.
      {
        clientAuthentication: 'private_key_jwt' as const,
        key: {
          privateKey: integration.privateKeyPem.replace(/\n[A-Za-z0-9+/]{10}/, '\nAAAAAAAAAA'),
          passphrase: TEST_PASSPHRASE,
        },
      },
    ];
    for (const extra of configs) {
      const error = await Test.createTestingModule({
        imports: [
          PlatformUserAuthModule.forRoot({
            baseUrl: platform.url,
            clientId: 'web-app',
            redirectUri: 'http://127.0.0.1:9/callback',
            stateSecret,
            ...extra,
          }),
        ],
      })
        .compile()
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PlatformAuthConfigError);
      expectNoSecrets(error, [clientSecret, stateSecret, TEST_PASSPHRASE, ...secrets()]);
    }
  });
});
