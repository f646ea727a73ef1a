import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  PlatformEmulator,
  type EmulatedIntegration,
  type TestCredentials,
} from 'nestjs-platform-auth/testing';
import { platformChecks } from '../../lib/cli/commands/doctor.command.js';
import { refusedPort, startLoopbackServer } from '../support/loopback-server.js';
import {
  expectNoSecrets,
  parseJson,
  pemFragments,
  runCli,
  tempDir,
  type CliResult,
  type DoctorCheck,
} from './cli-harness.js';

interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
  summary: { passed: number; failed: number; warnings: number; skipped: number };
}

const DAY_MS = 24 * 60 * 60 * 1000;
const SKEW_MS = 6 * 60_000;

let platform: PlatformEmulator;
let skewedPlatform: PlatformEmulator;
let integration: EmulatedIntegration;
let other: TestCredentials;
let files: ReturnType<typeof tempDir>;
let paths: Record<
  'key' | 'certificate' | 'otherKey' | 'otherCertificate' | 'expired' | 'expiring' | 'smallKey' | 'ecKey' | 'garbage',
  string
>;
let suspendedMachineId: string;
let expiringMachineId: string;
let closedPort: number;
let secrets: string[];

/** The healthy configuration, by file paths as most deployments have it. */
function env(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    PLATFORM_BASE_URL: platform.url,
    PLATFORM_MACHINE_ID: integration.machineId,
    PLATFORM_PRIVATE_KEY_PATH: paths.key,
    PLATFORM_CERTIFICATE_PATH: paths.certificate,
    ...overrides,
  };
}

async function doctor(overrides: Record<string, string> = {}): Promise<{ result: CliResult; report: DoctorReport }> {
  const result = await runCli(['doctor', '--json'], env(overrides));
  expectNoSecrets(result, secrets);
  return { result, report: parseJson<DoctorReport>(result) };
}

function checksOf(report: DoctorReport, id: string): DoctorCheck[] {
  return report.checks.filter((check) => check.id === id);
}

function statusOf(report: DoctorReport, id: string): DoctorCheck['status'] | undefined {
  return checksOf(report, id)[0]?.status;
}

function failure(report: DoctorReport, id: string): DoctorCheck {
  const failed = checksOf(report, id).find((check) => check.status === 'fail');
  expect(failed, `a failed '${id}' check in ${JSON.stringify(report.checks, null, 2)}`).toBeDefined();
  expect(failed!.fix, `the fix of '${id}'`).toBeTruthy();
  return failed!;
}

beforeAll(async () => {
  const now = Date.now();
  const [started, skewed, otherCredentials, closed] = await Promise.all([
    PlatformEmulator.start(),
    PlatformEmulator.start({ clockOffsetMs: SKEW_MS }),
    createTestCredentials(),
    refusedPort(),
  ]);
  platform = started;
  skewedPlatform = skewed;
  other = otherCredentials;
  closedPort = closed;
  integration = await platform.createIntegration({ name: 'doctor tests' });
  const [expired, expiring] = await Promise.all([
    createTestCredentials({
      privateKeyPem: integration.privateKeyPem,
      notBefore: new Date(now - 400 * DAY_MS),
      notAfter: new Date(now - DAY_MS),
    }),
    createTestCredentials({
      privateKeyPem: integration.privateKeyPem,
      notBefore: new Date(now - DAY_MS),
      notAfter: new Date(now + 10 * DAY_MS),
    }),
  ]);
  suspendedMachineId = platform.registerIntegration({
    certificatePem: other.certificatePem,
    status: 'Suspended',
  }).machineId;
  expiringMachineId = platform.registerIntegration({ certificatePem: expiring.certificatePem }).machineId;
  skewedPlatform.registerIntegration({ certificatePem: integration.certificatePem, machineId: integration.machineId });

  const pkcs8 = (key: ReturnType<typeof generateKeyPairSync>['privateKey']) =>
    key.export({ type: 'pkcs8', format: 'pem' }).toString();
  const smallKey = pkcs8(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey);
  const ecKey = pkcs8(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
  files = tempDir();
  paths = {
    key: files.write('private-key.pem', integration.privateKeyPem),
    certificate: files.write('publickey.cer', integration.certificatePem),
    otherKey: files.write('other-key.pem', other.privateKeyPem),
    otherCertificate: files.write('other.cer', other.certificatePem),
    expired: files.write('expired.cer', expired.certificatePem),
    expiring: files.write('expiring.cer', expiring.certificatePem),
    smallKey: files.write('small-key.pem', smallKey),
    ecKey: files.write('ec-key.pem', ecKey),
    garbage: files.write('garbage.pem', 'this is not a key\n'),
  };
  secrets = pemFragments(integration.privateKeyPem, other.privateKeyPem, smallKey, ecKey);
});

afterAll(async () => {
  files?.remove();
  await Promise.all([platform?.close(), skewedPlatform?.close()]);
});

// One case at a time: the CLI reports expires_in as the time from its request to the token's expiry, which other
// cases sharing this process's event loop would stretch past the rounding to whole seconds.
describe('platform-auth doctor', () => {
  it('passes every check of a healthy integration, one real exchange included, and exits 0', async () => {
    const { result, report } = await doctor();
    expect(result.code).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.checks.map((check) => [check.id, check.status])).toEqual([
      ['private-key', 'pass'],
      ['certificate', 'pass'],
      ['key-pair', 'pass'],
      ['validity', 'pass'],
      ['thumbprint', 'pass'],
      ['machine-id', 'pass'],
      ['audience', 'pass'],
      ['base-url', 'pass'],
      ['endpoint', 'pass'],
      ['clock', 'pass'],
      ['exchange', 'pass'],
    ]);
    expect(checksOf(report, 'private-key')[0].detail).toContain('RSA 2048-bit');
    expect(checksOf(report, 'validity')[0].detail).toMatch(/valid until .* \(36[45] days left\)/);
    expect(checksOf(report, 'thumbprint')[0].detail).toContain(integration.thumbprint);
    expect(checksOf(report, 'exchange')[0].detail).toMatch(/Bearer token, expires_in 600 s/);
    expect(report.summary).toEqual({ passed: 11, failed: 0, warnings: 0, skipped: 0 });
  });

  it('probes the token endpoint with a HEAD the emulator does not count: one exchange, the real one', async () => {
    platform.resetCounters();
    const journalBefore = platform.journal.length;
    const { report } = await doctor();
    expect(checksOf(report, 'endpoint')[0].detail).toMatch(/answered a HEAD with HTTP 405 in \d+ ms/);
    expect(platform.counters.exchanges).toEqual({ total: 1, accepted: 1, rejected: 0, faulted: 0 });
    expect(platform.journal.slice(journalBefore).map((entry) => [entry.method, entry.verdict])).toEqual([
      ['POST', 'accepted'],
    ]);
  });

  it('prints one line per check with ✓ and a summary for a person, from an --env-file', async () => {
    // Also a configured thumbprint as people paste it: lower case with colons.
    const colons = integration.thumbprint.toLowerCase().match(/../g)!.join(':');
    const envFile = files.write(
      'doctor.env',
      Object.entries(env({ PLATFORM_CERT_THUMBPRINT: colons }))
        .map(([name, value]) => `${name}=${value}`)
        .join('\n'),
    );
    const result = await runCli(['doctor', '--env-file', envFile], {});
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    for (const label of [
      'Private key',
      'Certificate',
      'Key pair',
      'Validity',
      'Thumbprint',
      'machineId',
      'Audience',
      'Base URL',
      'Token endpoint',
      'Clock',
      'Token exchange',
    ]) {
      expect(
        lines.some((line) => line.startsWith(`✓ ${label} `)),
        label,
      ).toBe(true);
    }
    expect(result.stdout).toMatch(/^✓ Thumbprint +PLATFORM_CERT_THUMBPRINT matches the certificate's sha1 thumbprint/m);
    expect(result.stdout).not.toContain('✗');
    expect(result.stdout).not.toContain('\u001b[');
    expect(result.stdout).toContain('11 passed, 0 failed, 0 warnings');
    expectNoSecrets(result, secrets);
  });

  it('fails on a missing key file, naming the variable, and still checks the network', async () => {
    const { result, report } = await doctor({ PLATFORM_PRIVATE_KEY_PATH: `${files.dir}/missing.pem` });
    expect(result.code).toBe(1);
    const line = failure(report, 'private-key');
    expect(line.setting).toBe('key.privateKeyPath (PLATFORM_PRIVATE_KEY_PATH)');
    expect(line.detail).toMatch(/cannot read private key file .*missing\.pem.*no such file/);
    expect(statusOf(report, 'certificate')).toBe('pass');
    expect(statusOf(report, 'key-pair')).toBe('skip');
    expect(statusOf(report, 'endpoint')).toBe('pass');
    expect(statusOf(report, 'clock')).toBe('pass');
    expect(statusOf(report, 'exchange')).toBe('skip');
  });

  it('fails on a file that is not a key', async () => {
    const { result, report } = await doctor({ PLATFORM_PRIVATE_KEY_PATH: paths.garbage });
    expect(result.code).toBe(1);
    expect(failure(report, 'private-key').detail).toMatch(/is not PEM text/);
  });

  it('fails on a key that is not RSA', async () => {
    const { result, report } = await doctor({ PLATFORM_PRIVATE_KEY_PATH: paths.ecKey });
    expect(result.code).toBe(1);
    expect(failure(report, 'private-key').detail).toMatch(/is an EC key; the platform requires an RSA key/);
  });

  it('fails on an RSA key below 2048 bits', async () => {
    const { result, report } = await doctor({ PLATFORM_PRIVATE_KEY_PATH: paths.smallKey });
    expect(result.code).toBe(1);
    expect(failure(report, 'private-key').detail).toMatch(/is a 1024-bit RSA key; at least 2048 bits are required/);
  });

  it('fails on a certificate made from another key', async () => {
    const { result, report } = await doctor({ PLATFORM_CERTIFICATE_PATH: paths.otherCertificate });
    expect(result.code).toBe(1);
    const line = failure(report, 'certificate');
    expect(line.setting).toBe('key.certificatePath (PLATFORM_CERTIFICATE_PATH)');
    expect(line.detail).toMatch(/does not match the private key/);
    expect(statusOf(report, 'private-key')).toBe('pass');
    expect(checksOf(report, 'key-pair')).toEqual([]);
  });

  it('fails on an expired certificate, with its date', async () => {
    const { result, report } = await doctor({ PLATFORM_CERTIFICATE_PATH: paths.expired });
    expect(result.code).toBe(1);
    expect(failure(report, 'certificate').detail).toMatch(/expired on \d{4}-\d\d-\d\dT/);
  });

  it('warns about a certificate that expires within 30 days, without failing', async () => {
    const { result, report } = await doctor({
      PLATFORM_CERTIFICATE_PATH: paths.expiring,
      PLATFORM_MACHINE_ID: expiringMachineId,
    });
    expect(result.code).toBe(0);
    // Made for 10 days, it has a little less left by now: whole days, rounded down, as every count of days left.
    expect(checksOf(report, 'validity')[0]).toMatchObject({
      status: 'pass',
      detail: expect.stringMatching(/\(9 days left\)/),
    });
    expect(checksOf(report, 'certificate').find((check) => check.status === 'warn')?.detail).toMatch(
      /expires in 9 days/,
    );
    expect(report.summary.warnings).toBe(1);
  });

  it("fails when the configured thumbprint is not the certificate's", async () => {
    const { result, report } = await doctor({ PLATFORM_CERT_THUMBPRINT: 'AB'.repeat(20) });
    expect(result.code).toBe(1);
    const line = failure(report, 'thumbprint');
    expect(line.setting).toBe('thumbprint (PLATFORM_CERT_THUMBPRINT)');
    expect(line.detail).toContain(`differs from the certificate's sha1 thumbprint ${integration.thumbprint}`);
  });

  it('fails on plain http off loopback and does not contact that host', async () => {
    const { result, report } = await doctor({ PLATFORM_BASE_URL: 'http://platform.example.com' });
    expect(result.code).toBe(1);
    expect(failure(report, 'base-url').detail).toMatch(/uses http: off loopback/);
    expect(statusOf(report, 'endpoint')).toBe('skip');
    expect(statusOf(report, 'exchange')).toBe('skip');
  });

  it('fails when nothing listens at the token endpoint', async () => {
    const { result, report } = await doctor({ PLATFORM_BASE_URL: `http://127.0.0.1:${closedPort}` });
    expect(result.code).toBe(1);
    const line = failure(report, 'endpoint');
    expect(line.detail).toContain('ECONNREFUSED');
    expect(line.fix).toMatch(/nothing listens/);
    expect(statusOf(report, 'clock')).toBe('skip');
    expect(statusOf(report, 'exchange')).toBe('skip');
  });

  it("fails on a clock more than 30 s off the platform's Date header, with the offset", async () => {
    const { result, report } = await doctor({ PLATFORM_BASE_URL: skewedPlatform.url });
    expect(result.code).toBe(1);
    const clock = failure(report, 'clock');
    expect(clock.detail).toMatch(/platform \+3(59|60|61) s against the local clock/);
    expect(clock.fix).toMatch(/ahead of the local clock/);
    // Six minutes ahead, the platform sees the assertion as expired; the library's hint names the skew.
    expect(failure(report, 'exchange').fix).toMatch(/clock/i);
  });

  it('tolerates the configured clock margin, as the exchange does, when another setting fails', async () => {
    // 90 s ahead: beyond the default margin (60 s), within the configured one (120 s).
    const ahead = await PlatformEmulator.start({ clockOffsetMs: 90_000 });
    try {
      const { report } = await doctor({
        PLATFORM_BASE_URL: ahead.url,
        PLATFORM_CLOCK_MARGIN_SECONDS: '120',
        PLATFORM_PRIVATE_KEY_PATH: `${files.dir}/missing.pem`,
      });
      expect(statusOf(report, 'private-key')).toBe('fail');
      const [clock] = checksOf(report, 'clock');
      expect(clock).toMatchObject({ status: 'pass', detail: expect.stringContaining('tolerates ±120 s') as string });
    } finally {
      await ahead.close();
    }
  });

  it('probes the configured token path, as the exchange does, when another setting fails', async () => {
    const paths: string[] = [];
    const server = await startLoopbackServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(req.url === '/oauth2/token' ? 405 : 404).end();
    });
    try {
      // No credentials, so no resolved configuration: the endpoint is probed all the same.
      const options = {
        baseUrl: `${server.url}/`,
        machineId: integration.machineId,
        exchange: { path: '/oauth2/token' },
      };
      const checks = await platformChecks(options, undefined);
      expect(paths).toEqual(['/oauth2/token']);
      expect(checks.find((check) => check.id === 'endpoint')).toMatchObject({
        status: 'pass',
        detail: expect.stringContaining(`${server.url}/oauth2/token answered a HEAD with HTTP 405`) as string,
      });
    } finally {
      await server.close();
    }
  });

  it('translates a refused exchange with a wrong machineId into its cause', async () => {
    const { result, report } = await doctor({ PLATFORM_MACHINE_ID: 'not-the-machine-id' });
    expect(result.code).toBe(1);
    const line = failure(report, 'exchange');
    expect(line.detail).toMatch(/HTTP 400 invalid_client/);
    expect(line.fix).toMatch(/^Wrong machineId/);
  });

  it('translates a refused exchange of a suspended integration into its cause', async () => {
    const { result, report } = await doctor({
      PLATFORM_PRIVATE_KEY_PATH: paths.otherKey,
      PLATFORM_CERTIFICATE_PATH: paths.otherCertificate,
      PLATFORM_MACHINE_ID: suspendedMachineId,
    });
    expect(result.code).toBe(1);
    const line = failure(report, 'exchange');
    expect(line.detail).toMatch(/unauthorized_client/);
    expect(line.fix).toMatch(/not Active/);
  });

  it('warns about a variable it does not read, naming the closest one, and passes with it', async () => {
    const { result, report } = await doctor({ PLATFORM_STARTUPCHECK: 'fail-value-not-shown' });
    expect(result.code).toBe(0);
    expect(report.checks).toContainEqual(
      expect.objectContaining({
        status: 'warn',
        detail: 'PLATFORM_STARTUPCHECK: is not a variable this package reads; did you mean PLATFORM_STARTUP_CHECK?',
      }),
    );
    expect(result.stdout).not.toContain('fail-value-not-shown');
  });

  it('names the near-miss of a missing required variable, and still warns about it when the configuration fails', async () => {
    const { PLATFORM_MACHINE_ID: machineId, ...rest } = env();
    const result = await runCli(['doctor', '--json'], { ...rest, PLATFORM_MACHINEID: machineId });
    const report = parseJson<DoctorReport>(result);
    expect(result.code).toBe(1);
    expect(report.checks).toContainEqual(
      expect.objectContaining({
        status: 'fail',
        detail: expect.stringContaining(
          'machineId (PLATFORM_MACHINE_ID): is required (the machineId shown in the portal; it becomes sub); PLATFORM_MACHINEID is set — did you mean PLATFORM_MACHINE_ID?',
        ),
      }),
    );
    expect(report.checks).toContainEqual(
      expect.objectContaining({
        status: 'warn',
        detail: 'PLATFORM_MACHINEID: is not a variable this package reads; did you mean PLATFORM_MACHINE_ID?',
      }),
    );
    expect(result.stdout).not.toContain(machineId);
  });

  it('reports every problem of an empty configuration at once, with ✗ and the fix for a person', async () => {
    const result = await runCli(['doctor'], {});
    expect(result.code).toBe(1);
    for (const variable of [
      'PLATFORM_BASE_URL',
      'PLATFORM_MACHINE_ID',
      'PLATFORM_PRIVATE_KEY',
      'PLATFORM_CERTIFICATE',
    ]) {
      expect(result.stdout).toMatch(new RegExp(`^✗ .*\\(${variable}\\)`, 'm'));
    }
    expect(result.stdout).toMatch(/^ +fix: /m);
    expect(result.stdout).toMatch(/^– Token exchange +not attempted/m);
    expect(result.stdout).toContain('4 failed');
  });
});
