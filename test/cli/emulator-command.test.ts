import { Test } from '@nestjs/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { authorizationRequestUrl } from '../support/user-sign-in.js';
import { runCli, startCli as startCommand, tempDir, untilJson, type RunningCli } from './cli-harness.js';

const running: RunningCli[] = [];

/** A long-running command, stopped after the file if a failed test left it running. */
function start(args: string[]): RunningCli {
  const cli = startCommand(args);
  running.push(cli);
  return cli;
}

/** `export NAME='value'` lines, as a shell would read them. */
function exportedVariables(stdout: string): Record<string, string> {
  return Object.fromEntries(
    [...stdout.matchAll(/^export (PLATFORM_[A-Z_]+)='([^']*)'$/gm)].map((match) => [match[1], match[2]]),
  );
}

afterAll(async () => {
  await Promise.all(running.map((cli) => cli.stop('SIGTERM')));
});

// One case at a time: the CLI reports expires_in as the time from its request to the token's expiry, which other
// cases sharing this process's event loop would stretch past the rounding to whole seconds.
describe('platform-auth emulator', () => {
  it('prints single-line variables that the library authenticates with, and exits 0 on SIGTERM', async () => {
    const cli = start(['emulator']);
    await cli.until((stdout) => stdout.includes('Running until'));
    const env = exportedVariables(cli.stdout());
    expect(Object.keys(env).sort()).toEqual([
      'PLATFORM_BASE_URL',
      'PLATFORM_CERTIFICATE',
      'PLATFORM_MACHINE_ID',
      'PLATFORM_PRIVATE_KEY',
    ]);
    expect(env.PLATFORM_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env.PLATFORM_PRIVATE_KEY).toMatch(/^-----BEGIN PRIVATE KEY-----\\n.*\\n-----END PRIVATE KEY-----$/);
    expect(env.PLATFORM_CERTIFICATE).not.toContain('\n');
    // The inspector is on by default, at the URL printed.
    const inspectorUrl = /^Inspector: (http:\/\/\S+)$/m.exec(cli.stdout())?.[1];
    expect(inspectorUrl).toBe(`${env.PLATFORM_BASE_URL}/_emulator/`);
    expect((await fetch(inspectorUrl!)).status).toBe(200);

    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(readPlatformAuthEnv(env))],
    }).compile();
    try {
      const token = await moduleRef.get(TokenProvider).getAccessToken();
      const billing = await fetch(`${env.PLATFORM_BASE_URL}/api/billing`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(billing.status).toBe(200);
    } finally {
      await moduleRef.close();
    }

    const stopped = await cli.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain('SIGTERM: emulator closed.');
  });

  it('answers one JSON document with --json and stops cleanly on SIGINT', async () => {
    const cli = start(['emulator', '--json']);
    const parsed = () => {
      try {
        return JSON.parse(cli.stdout()) as {
          url: string;
          integration: { machineId: string; status: string };
          env: Record<string, string>;
        };
      } catch {
        return undefined;
      }
    };
    await cli.until(() => parsed() !== undefined);
    const report = parsed()!;
    expect(report.integration.status).toBe('Active');
    expect(report.env).toMatchObject({
      PLATFORM_BASE_URL: report.url,
      PLATFORM_MACHINE_ID: report.integration.machineId,
    });

    const doctor = await runCli(['doctor', '--json'], report.env);
    expect(doctor.code).toBe(0);

    const stopped = await cli.stop('SIGINT');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain('SIGINT: emulator closed.');
  });

  it('registers a user client with --user-client and serves its sign-in page', async () => {
    const cli = start(['emulator', '--json', '--user-client', 'web-app=http://127.0.0.1:9/callback']);
    const report = await untilJson<{
      userSignIn?: { authorizeUrl: string; clientId: string };
      env: Record<string, string>;
    }>(cli);
    expect(report.userSignIn).toMatchObject({ clientId: 'web-app', redirectUris: ['http://127.0.0.1:9/callback'] });
    expect(report.env).toMatchObject({
      PLATFORM_USER_CLIENT_ID: 'web-app',
      PLATFORM_USER_REDIRECT_URI: 'http://127.0.0.1:9/callback',
    });
    const page = authorizationRequestUrl(report.userSignIn!.authorizeUrl, 'web-app', 'http://127.0.0.1:9/callback');
    expect((await fetch(page)).status).toBe(200);
    expect((await cli.stop('SIGTERM')).code).toBe(0);
  });

  it('refuses a malformed --user-client with a usage error', async () => {
    const result = await runCli(['emulator', '--user-client', 'web-app']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--user-client takes ID=REDIRECT_URI');
  });

  it('serves no inspector with --no-inspector', async () => {
    const cli = start(['emulator', '--no-inspector', '--json']);
    const report = await untilJson<{ url: string; inspectorUrl?: string }>(cli);
    expect(report.inspectorUrl).toBeUndefined();
    expect((await fetch(`${report.url}/_emulator/`)).status).toBe(404);
    expect((await cli.stop('SIGTERM')).code).toBe(0);
  });

  it('exits 1 naming the port when it is in use', async () => {
    const busy = await PlatformEmulator.start();
    try {
      const port = new URL(busy.url).port;
      const result = await runCli(['emulator', '--port', port]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`port ${port} on 127.0.0.1 is in use`);
    } finally {
      await busy.close();
    }
  });

  it("registers the user's own keygen certificate, with the flags, so doctor passes without code", async () => {
    const files = tempDir();
    try {
      expect((await runCli(['keygen', '--out', files.dir, '--days', '30'])).code).toBe(0);
      const certificate = `${files.dir}/publickey.cer`;
      const cli = start([
        'emulator',
        '--json',
        '--certificate',
        certificate,
        '--machine-id',
        'my-integration',
        '--token-lifetime',
        '120',
        '--clock-offset',
        '-3',
      ]);
      await cli.until((stdout) => stdout.trim().endsWith('}'));
      const report = JSON.parse(cli.stdout()) as {
        clockOffsetSeconds: number;
        tokenLifetimeSeconds: number;
        integration: { machineId: string; thumbprint: string; certificate: string };
        env: Record<string, string>;
      };
      expect(report).toMatchObject({ clockOffsetSeconds: -3, tokenLifetimeSeconds: 120 });
      expect(report.integration).toMatchObject({ machineId: 'my-integration', certificate });
      expect(report.integration.thumbprint).toMatch(/^[0-9A-F]{40}$/);
      expect(report.env).toEqual({
        PLATFORM_BASE_URL: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        PLATFORM_MACHINE_ID: 'my-integration',
        PLATFORM_PRIVATE_KEY_PATH: `${files.dir}/private-key.pem`,
        PLATFORM_CERTIFICATE_PATH: certificate,
      });

      const doctor = await runCli(['doctor', '--json'], report.env);
      const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ id: string; detail: string }> }).checks;
      expect(doctor.code).toBe(0);
      // doctor's clock check and the exchange agree: 3 s behind is within the default 60 s clock margin.
      expect(checks.find((check) => check.id === 'clock')?.detail).toMatch(/platform -[234] s .*tolerates ±60 s/);
      expect(checks.find((check) => check.id === 'exchange')?.detail).toContain('expires_in 120 s');
      expect(checks.find((check) => check.id === 'thumbprint')?.detail).toContain(report.integration.thumbprint);

      expect((await cli.stop('SIGTERM')).code).toBe(0);
    } finally {
      files.remove();
    }
  });

  it('names a missing certificate file (exit 1) and a malformed flag (exit 2)', async () => {
    const missing = await runCli(['emulator', '--certificate', 'no-such.cer']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read --certificate '.*no-such\.cer': no such file/);
    const offset = await runCli(['emulator', '--clock-offset', 'soon']);
    expect(offset.code).toBe(2);
    expect(offset.stderr).toContain("--clock-offset must be a number of seconds from -86400 to 86400, got 'soon'");
    const lifetime = await runCli(['emulator', '--token-lifetime', '0']);
    expect(lifetime.code).toBe(2);
    expect(lifetime.stderr).toContain('--token-lifetime must be a whole number from 1 to 86400');
  });
});
