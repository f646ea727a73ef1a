import { createPrivateKey } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { HttpService } from '@nestjs/axios';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthConfigError,
  PlatformAuthModule,
  TokenProvider,
  platformAuthConfig,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { createTestCredentials, PlatformEmulator, type TestCredentials } from 'nestjs-platform-auth/testing';
import { ConfigModule } from '@nestjs/config';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { expectNoSecrets as expectNoSecretsInOutput, runCli } from '../cli/cli-harness.js';
import { pemFragments, tempDir } from '../support/credential-variants.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { useLoopbackServers, type LoopbackServer } from '../support/loopback-server.js';
import { restoreEnv } from '../support/environment.js';
import { renderReachable } from '../support/reachable-rendering.js';

// Attacks through the options: each describe names the defence it checks (SECURITY.md lists them).

const PASSPHRASE = 'options-attacks passphrase, test only';
let credentials: TestCredentials;
let encryptedKeyPem: string;
let platform: PlatformEmulator;
let files: ReturnType<typeof tempDir>;
const server = useLoopbackServers();

beforeAll(async () => {
  credentials = await createTestCredentials();
  encryptedKeyPem = createPrivateKey(credentials.privateKeyPem)
    .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: PASSPHRASE })
    .toString();
  platform = await PlatformEmulator.start();
  files = tempDir();
});
afterAll(async () => {
  await platform.close();
  files.remove();
});

function options(overrides: Partial<PlatformAuthOptions> = {}): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    machineId: 'machine-1',
    ...overrides,
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem, ...overrides.key },
  };
}

async function configError(input: PlatformAuthOptions): Promise<PlatformAuthConfigError> {
  let caught: unknown;
  try {
    await loadPlatformAuthConfig(input, Date.now());
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(PlatformAuthConfigError);
  return caught as PlatformAuthConfigError;
}

describe('PEM text in a setting that is not a key or certificate is refused without an echo', () => {
  it.each(['machineId', 'audience', 'thumbprint', 'exchange.path', 'baseUrl'] as const)('in %s', async (option) => {
    for (const pem of [credentials.privateKeyPem, credentials.privateKeyPem.replace(/\n/g, '\\n')]) {
      const error = await configError(
        options(option === 'exchange.path' ? { exchange: { path: pem } } : { [option]: pem }),
      );
      expect(error.problems.map((p) => p.option)).toContain(option);
      expectNoSecrets(error, [credentials.privateKeyPem, ...pemFragments(credentials.privateKeyPem)]);
    }
  });

  it.each(['doctor', 'assertion'])('the CLI %s refuses it and does not print it', async (command) => {
    const keyPath = files.write('key.pem', credentials.privateKeyPem);
    const certificatePath = files.write('certificate.pem', credentials.certificatePem);
    for (const variable of ['PLATFORM_MACHINE_ID', 'PLATFORM_AUDIENCE']) {
      const result = await runCli([command], {
        PLATFORM_BASE_URL: platform.url,
        PLATFORM_MACHINE_ID: 'machine-1',
        PLATFORM_PRIVATE_KEY_PATH: keyPath,
        PLATFORM_CERTIFICATE_PATH: certificatePath,
        [variable]: credentials.privateKeyPem,
      });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).toContain(variable);
      expectNoSecretsInOutput(result, pemFragments(credentials.privateKeyPem));
    }
  });
});

describe('after start-up the Nest container holds no PEM text and no passphrase', () => {
  const secrets = () => [PASSPHRASE, ...pemFragments(encryptedKeyPem, credentials.privateKeyPem)];

  it('forRoot, and the options object stays reusable', async () => {
    const shared = options({ key: { privateKey: encryptedKeyPem, passphrase: PASSPHRASE } });
    const snapshot = { ...shared };
    for (let round = 0; round < 2; round += 1) {
      const moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(shared)] }).compile();
      await moduleRef.init();
      const rendering = renderReachable(moduleRef, 12);
      for (const secret of secrets()) expect(rendering.includes(secret), secret.slice(0, 8)).toBe(false);
      await moduleRef.close();
    }
    expect(shared).toEqual(snapshot);
  });

  it('forRootAsync with a factory returning a shared object', async () => {
    const shared = options({ key: { privateKey: encryptedKeyPem, passphrase: PASSPHRASE } });
    const snapshot = { ...shared };
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRootAsync({ useFactory: () => shared })],
    }).compile();
    await moduleRef.init();
    const rendering = renderReachable(moduleRef, 12);
    for (const secret of secrets()) expect(rendering.includes(secret), secret.slice(0, 8)).toBe(false);
    expect(shared).toEqual(snapshot);
    expect(moduleRef.get(TokenProvider)).toBeInstanceOf(TokenProvider);
    await moduleRef.close();
  });

  it('forRootAsync from platformAuthConfig (the environment)', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      PLATFORM_BASE_URL: 'https://platform.example.com',
      PLATFORM_MACHINE_ID: 'machine-1',
      PLATFORM_PRIVATE_KEY: encryptedKeyPem,
      PLATFORM_PRIVATE_KEY_PASSPHRASE: PASSPHRASE,
      PLATFORM_CERTIFICATE: credentials.certificatePem,
    });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ConfigModule.forRoot({ ignoreEnvFile: true }),
          PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
        ],
      }).compile();
      await moduleRef.init();
      const rendering = renderReachable(moduleRef, 12);
      for (const secret of secrets()) expect(rendering.includes(secret), secret.slice(0, 8)).toBe(false);
      await moduleRef.close();
    } finally {
      restoreEnv(saved);
    }
  });
});

describe('options are read as own properties only', () => {
  /** Sends one request to `target` through the module's HttpService; what `target` received is in its requests. */
  async function requestThroughModule(input: PlatformAuthOptions, target: LoopbackServer): Promise<void> {
    const moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(input)] }).compile();
    await moduleRef.init();
    try {
      await firstValueFrom(moduleRef.get(HttpService).get(`${target.url}/stolen`));
    } finally {
      await moduleRef.close();
    }
  }

  it('a "__proto__" key parsed from JSON does not add allowed origins', async () => {
    const foreign = await server();
    const parsed = JSON.parse(`{"__proto__": {"allowedOrigins": ["${foreign.origin}"]}}`) as PlatformAuthOptions;
    await requestThroughModule(Object.assign(parsed, (await platform.createIntegration()).moduleOptions), foreign);
    expect(foreign.requests).toEqual([expect.objectContaining({ authorization: undefined })]);
  });

  it('a polluted Object.prototype.allowedOrigins is ignored', async () => {
    const foreign = await server();
    const integration = await platform.createIntegration();
    const prototype = Object.prototype as { allowedOrigins?: string[] };
    prototype.allowedOrigins = [foreign.origin];
    try {
      await requestThroughModule({ ...integration.moduleOptions }, foreign);
    } finally {
      delete prototype.allowedOrigins;
    }
    expect(foreign.requests).toEqual([expect.objectContaining({ authorization: undefined })]);
  });
});

describe('decision: a value in a *_PATH setting is quoted only when it looks like a path', () => {
  it('a passphrase pasted into key.privateKeyPath is not repeated', async () => {
    const error = await configError(options({ key: { privateKey: undefined, privateKeyPath: PASSPHRASE } }));
    expect(error.problems).toEqual([expect.objectContaining({ option: 'key.privateKeyPath' })]);
    expect(error.message).toMatch(/no such file/);
    expectNoSecrets(error, [PASSPHRASE]);
  });

  it('a missing file named by an absolute or relative path, or by a .pem name, is still quoted', async () => {
    for (const path of ['/nonexistent/key.pem', './missing/key.pem', 'key-file.pem']) {
      expect((await configError(options({ key: { privateKey: undefined, privateKeyPath: path } }))).message).toContain(
        `'${path}'`,
      );
    }
  });
});
