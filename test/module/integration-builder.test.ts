import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformTenantConfigError,
  PlatformTenants,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { restoreEnv } from '../support/environment.js';
import { parseJson, runCli } from '../cli/cli-harness.js';

interface Problem {
  readonly option: string;
  readonly message: string;
}

let credentials: TestCredentials;
const saved = { ...process.env };

beforeAll(async () => {
  credentials = await createTestCredentials();
});

afterEach(() => restoreEnv(saved));

/** The same settings as options and as the variables the command line reads. */
function settings(overrides: { baseUrl?: string; machineId?: string; reload?: number } = {}) {
  const baseUrl = overrides.baseUrl ?? 'https://platform.example.com';
  const machineId = overrides.machineId ?? 'machine-1';
  const options: PlatformAuthOptions = {
    baseUrl,
    machineId,
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
    ...(overrides.reload === undefined ? {} : { credentialsReloadIntervalMs: overrides.reload }),
  };
  const env: Record<string, string> = {
    PLATFORM_BASE_URL: baseUrl,
    PLATFORM_MACHINE_ID: machineId,
    PLATFORM_PRIVATE_KEY: credentials.privateKeyPem,
    PLATFORM_CERTIFICATE: credentials.certificatePem,
    ...(overrides.reload === undefined ? {} : { PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS: String(overrides.reload) }),
  };
  return { options, env };
}

const sameShape = (problems: readonly Problem[]) =>
  problems.map(({ option, message }) => ({ option, message })).sort((a, b) => a.option.localeCompare(b.option));

/** `forRoot`'s start-up: its error, or its logger's lines once started and closed. */
async function forRoot(options: PlatformAuthOptions, logger = new CapturingLogger()): Promise<unknown> {
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...options, logger })],
    }).compile();
    await moduleRef.close();
    return logger;
  } catch (error) {
    return error;
  }
}

/** A registry whose one tenant has `options`; the tenant's error, or the registry's logger once it is built. */
async function tenant(options: PlatformAuthOptions, logger = new CapturingLogger()): Promise<unknown> {
  const moduleRef = await Test.createTestingModule({
    imports: [PlatformAuthModule.forTenants({ logger, resolve: () => Promise.resolve(options) })],
  }).compile();
  await moduleRef.init();
  try {
    await moduleRef.get(PlatformTenants).get('acme');
    return logger;
  } catch (error) {
    return error;
  } finally {
    await moduleRef.close();
  }
}

describe('one builder for every integration', () => {
  it('gives the same problems for the same settings through forRoot, a tenant and the command line', async () => {
    const { options, env } = settings({ baseUrl: 'ftp://platform.example.com', machineId: ' ' });

    const root = await forRoot(options);
    const ofTenant = await tenant(options);
    const cli = await runCli(['assertion', '--json', '--no-env-file'], env);

    expect(root).toBeInstanceOf(PlatformAuthConfigError);
    expect(ofTenant).toBeInstanceOf(PlatformTenantConfigError);
    expect(cli.code).toBe(1);
    const expected = sameShape((root as PlatformAuthConfigError).problems);
    expect(expected.map((problem) => problem.option)).toEqual(['baseUrl', 'machineId']);
    expect(sameShape((ofTenant as PlatformTenantConfigError).problems)).toEqual(expected);
    expect(sameShape(parseJson<{ problems: Problem[] }>(cli).problems)).toEqual(expected);
  });

  it('reports a warning of the settings on every path: forRoot, a tenant and the command line', async () => {
    const { options, env } = settings({ reload: 60_000 });
    const message = 'is set but no *_PATH file is configured; nothing is re-read';

    const root = (await forRoot(options)) as CapturingLogger;
    const ofTenant = (await tenant(options)) as CapturingLogger;
    const cli = runCli(['assertion', '--json', '--no-env-file'], env);

    const warnings = (logger: CapturingLogger) =>
      logger.lines.filter((line) => line.level === 'warn').map((line) => line.message);
    expect(warnings(root)).toEqual([
      `credentialsReloadIntervalMs (PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS): ${message}`,
    ]);
    expect(warnings(ofTenant)).toEqual([
      expect.stringContaining(`Tenant settings: credentialsReloadIntervalMs: ${message}`),
    ]);
    const printed = parseJson<{ warnings: Problem[] }>(await cli).warnings;
    expect(sameShape(printed)).toEqual([{ option: 'credentialsReloadIntervalMs', message }]);
  });

  it("checks a tenant's settings, not the application's environment: no variable is blamed or warned about", async () => {
    // A mistyped variable of the application's own integration: forRoot names it, a tenant has nothing to do with it.
    process.env.PLATFORM_MACHINEID = 'machine-1';
    const { options } = settings();

    const missing = await tenant({ ...options, machineId: undefined as never });
    const built = (await tenant(options)) as CapturingLogger;

    expect(missing).toBeInstanceOf(PlatformTenantConfigError);
    expect((missing as PlatformTenantConfigError).problems).toEqual([
      { option: 'machineId', setting: 'machineId', message: expect.not.stringContaining('PLATFORM_') },
    ]);
    expect(built.lines.filter((line) => line.level === 'warn')).toEqual([]);
    const root = (await forRoot(options)) as CapturingLogger;
    expect(root.lines.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual([
      expect.stringMatching(/^PLATFORM_MACHINEID: is not a variable this package reads/),
    ]);
  });
});
