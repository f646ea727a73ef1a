import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { startLoopbackServer, type LoopbackServer } from '../support/loopback-server.js';
import { parseJson, runCli, tempDir } from './cli-harness.js';

interface DoctorReport {
  ok: boolean;
  checks: Array<{ id: string; status: string; detail: string; fix?: string }>;
}

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let notFound: LoopbackServer;
let files: ReturnType<typeof tempDir>;
let dotenv: string;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration();
  notFound = await startLoopbackServer((_req, res) => res.writeHead(404, { 'Content-Type': 'text/plain' }).end('nope'));
  files = tempDir();
  const key = files.write('private-key.pem', integration.privateKeyPem);
  const certificate = files.write('publickey.cer', integration.certificatePem);
  dotenv = [
    `PLATFORM_BASE_URL=${platform.url}`,
    `PLATFORM_MACHINE_ID=${integration.machineId}`,
    `PLATFORM_PRIVATE_KEY_PATH=${key}`,
    `PLATFORM_CERTIFICATE_PATH=${certificate}`,
  ].join('\n');
  files.write('.env', dotenv);
});

afterAll(async () => {
  files?.remove();
  await Promise.all([platform?.close(), notFound?.close()]);
});

function checkOf(report: DoctorReport, id: string) {
  return report.checks.find((check) => check.id === id);
}

describe.concurrent('the CLI reads ./.env as ConfigModule does', () => {
  it('reads ./.env from the working directory by default and says so', async () => {
    const result = await runCli(['doctor', '--json'], {}, { cwd: files.dir });
    expect(result.code).toBe(0);
    expect(parseJson<DoctorReport>(result).ok).toBe(true);
    expect(result.stderr).toContain(`Read 4 variables from ${files.dir}/.env (the default`);
    expect(result.stderr).toContain('--no-env-file to skip');
  });

  it('skips ./.env with --no-env-file, and lets the environment win over the file', async () => {
    const skipped = await runCli(['doctor', '--json', '--no-env-file'], {}, { cwd: files.dir });
    expect(skipped.code).toBe(1);
    expect(checkOf(parseJson<DoctorReport>(skipped), 'machine-id')?.status).toBe('fail');

    const overridden = await runCli(
      ['doctor', '--json'],
      { PLATFORM_MACHINE_ID: 'not-the-registered-one' },
      { cwd: files.dir },
    );
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toContain('Read 3 variables from');
    expect(checkOf(parseJson<DoctorReport>(overridden), 'exchange')?.status).toBe('fail');
  });

  it('refuses --env-file together with --no-env-file as a usage error', async () => {
    const result = await runCli(['token', '--env-file', '.env', '--no-env-file'], {}, { cwd: files.dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--env-file and --no-env-file exclude each other');
  });
});

describe.concurrent('the base URL rule', () => {
  it('refuses a base URL with a path at the configuration check, saying to remove it', async () => {
    const result = await runCli(['doctor', '--json', '--no-env-file'], {
      PLATFORM_BASE_URL: `${platform.url}/api`,
      PLATFORM_MACHINE_ID: integration.machineId,
      PLATFORM_PRIVATE_KEY: integration.privateKeyPem,
      PLATFORM_CERTIFICATE: integration.certificatePem,
    });
    const report = parseJson<DoctorReport>(result);
    expect(result.code).toBe(1);
    expect(checkOf(report, 'base-url')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining("has the path '/api'; remove the path"),
    });
    expect(checkOf(report, 'endpoint')?.status).toBe('skip');
  });

  it('never shows a token endpoint that answers 404 as reachable and fine', async () => {
    const result = await runCli(['doctor', '--json', '--no-env-file'], {
      PLATFORM_BASE_URL: notFound.url,
      PLATFORM_MACHINE_ID: integration.machineId,
      PLATFORM_PRIVATE_KEY: integration.privateKeyPem,
      PLATFORM_CERTIFICATE: integration.certificatePem,
    });
    const endpoint = checkOf(parseJson<DoctorReport>(result), 'endpoint');
    expect(result.code).toBe(1);
    expect(endpoint).toMatchObject({ status: 'fail', detail: expect.stringContaining('HTTP 404') });
    expect(endpoint?.fix).toContain('without a path');
  });
});
