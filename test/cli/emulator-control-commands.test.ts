import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { exchangeOnce } from '../../lib/cli/cli.exchange.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { parseJson, runCli, startBin, tempDir, untilJson, type RunningCli } from './cli-harness.js';

// The emulator runs as the bin in a process of its own, as a developer starts it in one terminal; the commands that
// drive it run in this process (runCli), which is another process as far as the emulator can tell.

interface AddReport {
  machineId: string;
  name: string;
  thumbprint: string;
  env?: Record<string, string>;
  tenant?: PlatformAuthOptions & { key: { privateKeyPath: string; certificatePath: string } };
}

let files: ReturnType<typeof tempDir>;
let emulator: RunningCli;
let url: string;
const keys: Record<string, { certificatePath: string; privateKeyPath: string }> = {};

beforeAll(async () => {
  files = tempDir();
  emulator = startBin(['emulator', '--json', '--no-inspector'], { shared: true });
  url = (await untilJson<{ url: string }>(emulator)).url;
  for (const name of ['orders', 'acme']) {
    const out = join(files.dir, name);
    keys[name] = parseJson<{ certificatePath: string; privateKeyPath: string }>(
      await runCli(['keygen', '--out', out, '--json']),
    );
  }
}, 120_000);
afterAll(async () => {
  await emulator?.stop();
  files?.remove();
});

const cli = (args: string[]) => runCli(['emulator', ...args, '--url', url]);

describe('platform-auth emulator add | fault | reset, against a running emulator', () => {
  it('add registers a certificate and prints its machineId and the forRoot variables, which exchange for a token', async () => {
    const result = await cli(['add', '--certificate', keys.orders.certificatePath, '--name', 'orders', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as AddReport;
    expect(report.machineId).toMatch(/^[0-9a-f-]{36}$/);
    expect(report.env).toEqual({
      PLATFORM_ORDERS_BASE_URL: url,
      PLATFORM_ORDERS_MACHINE_ID: report.machineId,
      PLATFORM_ORDERS_PRIVATE_KEY_PATH: keys.orders.privateKeyPath,
      PLATFORM_ORDERS_CERTIFICATE_PATH: keys.orders.certificatePath,
    });
    const token = await runCli(['token', '--json', '--no-env-file', '--integration', 'orders'], report.env);
    expect(parseJson(token)).toMatchObject({ ok: true, tokenType: 'Bearer' });

    const twice = await cli(['add', '--certificate', keys.orders.certificatePath]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('the emulator refused the registration (HTTP 400)');
    expect(twice.stderr).toContain('already registered');
  });

  it("add --tenant prints the tenant's settings as JSON, not PLATFORM_<NAME>_ variables, and they exchange as a tenant's do", async () => {
    const result = await cli(['add', '--certificate', keys.acme.certificatePath, '--name', 'acme', '--tenant']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('PLATFORM_');
    const printed = result.stdout.slice(result.stdout.indexOf('{'));
    const tenant = JSON.parse(printed) as NonNullable<AddReport['tenant']>;
    expect(tenant).toEqual({
      baseUrl: url,
      machineId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      key: { privateKeyPath: keys.acme.privateKeyPath, certificatePath: keys.acme.certificatePath },
    });
    expect(result.stdout).toContain(`✓ Registered ${keys.acme.certificatePath} as tenant 'acme' on ${url}.`);
    expect(result.stdout).toContain(`machineId    ${tenant.machineId}`);
    const exchanged = await exchangeOnce(
      await loadPlatformAuthConfig(tenant, Date.now(), { integration: 'tenant' }, {}),
    );
    expect(exchanged.ok).toBe(true);
  });

  it('fault queues what injectFault queues, one per request; reset drops what is left', async () => {
    const queued = await cli(['fault', '--target', 'api', '--status', '503', '--retry-after', '2', '--times', '3']);
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toContain(
      `Queued HTTP 503 with Retry-After: 2 for the next 3 requests to the api on ${url}.`,
    );
    for (let request = 0; request < 2; request++) {
      const answer = await fetch(`${url}/api/billing`);
      expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '2']);
    }
    const dropped = await cli(['fault', '--target', 'token', '--kind', 'drop', '--json']);
    expect(parseJson(dropped)).toMatchObject({ ok: true, fault: { kind: 'drop' }, pending: { token: 1, api: 1 } });

    const reset = await cli(['reset', '--json']);
    expect(parseJson(reset)).toEqual({ ok: true, url, cleared: { token: 1, api: 1 } });
    expect((await fetch(`${url}/api/billing`)).status).toBe(401);
    expect((await cli(['reset'])).stdout).toContain(
      'Dropped 0 pending faults (token 0, api 0) and zeroed the counters',
    );
  });

  it('a dropped connection on the token endpoint is what a token exchange then sees', async () => {
    expect((await cli(['fault', '--target', 'token', '--kind', 'drop'])).code).toBe(0);
    const env = { PLATFORM_BASE_URL: url, PLATFORM_MACHINE_ID: 'anyone' };
    const { privateKeyPath, certificatePath } = keys.orders;
    const token = await runCli(['token', '--json', '--no-env-file'], {
      ...env,
      PLATFORM_PRIVATE_KEY_PATH: privateKeyPath,
      PLATFORM_CERTIFICATE_PATH: certificatePath,
    });
    expect(parseJson<{ error: { reason: string } }>(token).error.reason).toBe('network_error');
  });

  it('says what is wrong with a command line, and never sends it (exit 2)', async () => {
    const cases: Array<[string[], string]> = [
      [['fault', '--status', '500'], 'needs --target token or --target api, got nothing'],
      [['fault', '--target', 'api'], 'needs either --status CODE or --kind KIND'],
      [
        ['fault', '--target', 'api', '--status', '500', '--retry-after', '1'],
        '--retry-after goes with --status 429 or 503',
      ],
      [
        ['fault', '--target', 'api', '--kind', 'explode'],
        '--kind must be one of drop, delay, hang, html, malformed-json',
      ],
      [['fault', '--target', 'api', '--kind', 'delay', '--delay', 'long'], '--delay must be a number of seconds'],
      [
        ['fault', '--target', 'api', '--status', '500', '--times', '0'],
        '--times must be a whole number from 1 to 1000',
      ],
      [['add', '--certificate', keys.acme.certificatePath, '--name', 'Bad Name'], '--name takes lower-case letters'],
      [['add'], "'emulator add' needs --certificate FILE"],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args);
      expect([result.code, result.stderr], args.join(' ')).toEqual([2, expect.stringContaining(message)]);
    }
    const remote = await runCli(['emulator', 'reset', '--url', 'http://platform.example']);
    expect([remote.code, remote.stderr]).toEqual([2, expect.stringContaining('an http:// address on this machine')]);
  });
});
