import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, runCli, startCli, tempDir, untilJson, type RunningCli, type DoctorCheck } from './cli-harness.js';

interface KeygenReport {
  certificatePath: string;
  thumbprint: string;
  env: Record<string, string>;
}
interface EmulatorReport {
  url: string;
  integration: { machineId: string; thumbprint: string };
  namedIntegrations: Array<{ integration: string; machineId: string; thumbprint: string }>;
  env: Record<string, string>;
  notes: string[];
}
interface StateFile {
  url: string;
  port: number;
  integrations: Array<{ name: string; machineId: string; certificatePem: string; certificatePath?: string }>;
}

let files: ReturnType<typeof tempDir>;
const running: RunningCli[] = [];
beforeAll(() => {
  files = tempDir();
});
afterAll(async () => {
  await Promise.all(running.map((cli) => cli.stop()));
  files?.remove();
});

/** `platform-auth emulator …` in this process until stopped, and its `--json` report once it is ready. */
async function emulator(args: string[]): Promise<{ cli: RunningCli; report: EmulatorReport }> {
  const cli = startCli(['emulator', '--json', ...args], {}, { cwd: files.dir });
  running.push(cli);
  return { cli, report: await untilJson<EmulatorReport>(cli) };
}

async function doctor(env: Record<string, string>): Promise<DoctorCheck[]> {
  return parseJson<{ checks: DoctorCheck[] }>(await runCli(['doctor', '--json', '--no-env-file'], env)).checks;
}

const exchangeChecks = (checks: DoctorCheck[]) =>
  checks.filter((c) => c.id.startsWith('exchange') || c.id === 'next-pair').map((c) => [c.id, c.status, c.detail]);

const readState = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as StateFile;

describe('the rotation runbook of docs/operations.md, rehearsed with the command line alone', () => {
  it('keygen --next, emulator --state, doctor, emulator upload, the switch, a restart, promote the files', async () => {
    const dir = join(files.dir, 'secrets');
    const statePath = join(files.dir, 'emulator.json');
    const current = parseJson<KeygenReport>(await runCli(['keygen', '--out', dir, '--json']));

    // 1. The next pair, with the variables to deploy printed under the step that deploys them.
    const keygen = await runCli(['keygen', '--next', '--out', dir]);
    expect(keygen.code, keygen.stderr).toBe(0);
    const steps = keygen.stdout.slice(keygen.stdout.indexOf('Next steps:')).split('\n');
    expect(steps.slice(1, 5)).toEqual([
      expect.stringMatching(/^ {2}1\. Deploy the next pair/),
      `       PLATFORM_NEXT_PRIVATE_KEY_PATH=${join(dir, 'next-private-key.pem')}`,
      `       PLATFORM_NEXT_CERTIFICATE_PATH=${join(dir, 'next-publickey.cer')}`,
      expect.stringMatching(/^ {2}2\. Check both pairs/),
    ]);
    expect(keygen.stdout).toContain(`emulator upload --certificate ${join(dir, 'next-publickey.cer')}`);

    // The portal holds the current certificate; the emulator keeps what it holds in the state file.
    const first = await emulator(['--certificate', current.certificatePath, '--state', statePath]);
    const env: Record<string, string> = {
      ...first.report.env,
      PLATFORM_NEXT_PRIVATE_KEY_PATH: join(dir, 'next-private-key.pem'),
      PLATFORM_NEXT_CERTIFICATE_PATH: join(dir, 'next-publickey.cer'),
    };
    expect(first.report.env.PLATFORM_PRIVATE_KEY_PATH).toBe(join(dir, 'private-key.pem'));
    expect(statSync(statePath).mode & 0o777).toBe(0o600);
    expect(readFileSync(statePath, 'utf8')).not.toMatch(/PRIVATE KEY/);
    expect(readState(statePath)).toMatchObject({
      url: first.report.url,
      integrations: [{ name: 'default', machineId: first.report.integration.machineId }],
    });

    // 2. doctor: the current pair is accepted, the next one not registered yet; both dates in one format.
    const iso = /valid until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(36[45] days left\)/;
    const before = await doctor(env);
    expect(before.find((check) => check.id === 'validity')?.detail).toMatch(iso);
    expect(exchangeChecks(before)).toEqual([
      ['next-pair', 'pass', expect.stringMatching(iso)],
      ['exchange', 'pass', expect.stringMatching(/accepts it/)],
      ['exchange-next', 'pass', expect.stringMatching(/not registered yet/)],
    ]);

    // 3. The portal step, on the emulator.
    const upload = await runCli(
      ['emulator', 'upload', '--certificate', env.PLATFORM_NEXT_CERTIFICATE_PATH, '--state', statePath],
      {},
      { cwd: files.dir },
    );
    expect(upload.code, upload.stderr).toBe(0);
    const next = parseJson<KeygenReport>(
      await runCli(['thumbprint', env.PLATFORM_NEXT_CERTIFICATE_PATH, '--json']),
    ) as unknown as { thumbprintSha1: string };
    expect(upload.stdout).toContain(`thumbprint ${current.thumbprint} → ${next.thumbprintSha1}`);
    // Replaced whole, by a rename: no temporary file is left beside it.
    expect(readdirSync(files.dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(readState(statePath).integrations[0]).toMatchObject({
      machineId: first.report.integration.machineId,
      certificatePem: expect.stringContaining(readFileSync(env.PLATFORM_NEXT_CERTIFICATE_PATH, 'utf8').trim()),
    });

    // 4. The switch: the current pair is refused as not registered, the next one is accepted within the exchange.
    expect(exchangeChecks(await doctor(env))).toEqual([
      ['next-pair', 'pass', expect.any(String)],
      ['exchange', 'warn', expect.stringMatching(/refused as not registered/)],
      ['exchange-next', 'pass', expect.stringMatching(/accepts the next pair now/)],
    ]);
    const token = await runCli(['token', '--json', '--no-env-file'], env);
    expect(token.code, token.stdout).toBe(0);

    // A restart with the same command line: same port, same machineId, and the certificate uploaded last.
    await first.cli.stop();
    const second = await emulator(['--certificate', current.certificatePath, '--state', statePath]);
    expect(second.report.url).toBe(first.report.url);
    expect(second.report.integration).toMatchObject({
      machineId: first.report.integration.machineId,
      thumbprint: next.thumbprintSha1,
    });
    expect(second.report.notes).toContain(
      `'default' holds the certificate uploaded last (thumbprint ${next.thumbprintSha1}), not the one in ${current.certificatePath}.`,
    );

    // 5. Promote the files: the .env written on the first start is still valid.
    renameSync(env.PLATFORM_NEXT_PRIVATE_KEY_PATH, env.PLATFORM_PRIVATE_KEY_PATH);
    renameSync(env.PLATFORM_NEXT_CERTIFICATE_PATH, env.PLATFORM_CERTIFICATE_PATH);
    const promoted = await doctor(first.report.env);
    expect(promoted.filter((check) => check.status !== 'pass')).toEqual([]);
    expect(exchangeChecks(promoted)).toEqual([['exchange', 'pass', expect.stringMatching(/issued/)]]);
  });

  it('keeps throwaway integrations across restarts without their keys, so the first .env goes on working', async () => {
    const statePath = join(files.dir, 'throwaway.json');
    const first = await emulator(['--integration', 'billing', '--state', statePath]);
    const state = readFileSync(statePath, 'utf8');
    expect(state).not.toMatch(/PRIVATE KEY/);
    expect(state).not.toContain(first.report.env.PLATFORM_PRIVATE_KEY.slice(40, 80));
    await first.cli.stop();

    const second = await emulator(['--integration', 'billing', '--state', statePath]);
    expect(second.report.url).toBe(first.report.url);
    expect(second.report.integration.machineId).toBe(first.report.integration.machineId);
    expect(second.report.namedIntegrations.map((named) => [named.integration, named.machineId])).toEqual(
      first.report.namedIntegrations.map((named) => [named.integration, named.machineId]),
    );
    expect(second.report.env.PLATFORM_PRIVATE_KEY).toBeUndefined();
    expect(second.report.env.PLATFORM_CERTIFICATE).toBe(first.report.env.PLATFORM_CERTIFICATE);
    expect(second.report.notes).toContain(
      'PLATFORM_BILLING_PRIVATE_KEY: keep the throwaway key printed when the state file was written; the state holds no private key.',
    );
    for (const args of [[], ['--integration', 'billing']]) {
      const token = await runCli(['token', '--no-env-file', ...args], first.report.env);
      expect(token.code, token.stdout + token.stderr).toBe(0);
    }
    await second.cli.stop();
  });

  it('says what is wrong: a state file that is not one, a machineId it does not keep, an upload it cannot make', async () => {
    const broken = join(files.dir, 'broken.json');
    writeFileSync(broken, '{"version": 2}');
    const notState = await runCli(['emulator', '--state', broken], {}, { cwd: files.dir });
    expect(notState.code).toBe(1);
    expect(notState.stderr).toContain(`--state '${broken}' is not an emulator state file (no "version": 1)`);

    const statePath = join(files.dir, 'kept.json');
    const kept = await emulator(['--state', statePath]);
    const otherId = await runCli(['emulator', '--state', statePath, '--machine-id', 'another'], {}, { cwd: files.dir });
    expect(otherId.code).toBe(2);
    expect(otherId.stderr).toContain(`--state keeps machineId ${kept.report.integration.machineId} for 'default'`);

    const key = join(files.dir, 'key.pem');
    writeFileSync(key, kept.report.env.PLATFORM_PRIVATE_KEY.replace(/\\n/g, '\n'));
    const upload = (...args: string[]) => runCli(['emulator', 'upload', ...args], {}, { cwd: files.dir });
    const wrongFile = await upload('--certificate', key, '--state', statePath);
    expect(wrongFile.code).toBe(1);
    expect(wrongFile.stderr).toMatch(/holds a private key, not a certificate/);
    expect(wrongFile.stderr).not.toContain('PRIVATE KEY');
    const certificate = join(files.dir, 'certificate.pem');
    writeFileSync(certificate, kept.report.env.PLATFORM_CERTIFICATE.replace(/\\n/g, '\n'));
    const unknown = await upload('--certificate', certificate, '--integration', 'billing', '--url', kept.report.url);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      `the emulator at ${kept.report.url} has no integration 'billing'; it has 'platform-auth emulator'`,
    );
    const neither = await upload('--certificate', certificate);
    expect(neither.code).toBe(2);
    expect((await upload('--certificate', certificate, '--url', 'http://example.com')).code).toBe(2);
    await kept.cli.stop();
    const stopped = await upload('--certificate', certificate, '--state', statePath);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/no emulator answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });
});
