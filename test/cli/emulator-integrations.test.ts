import { parseEnv } from 'node:util';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  getPlatformHttpServiceToken,
  getTokenProviderToken,
  type PlatformHttpService,
  type TokenProvider,
} from 'nestjs-platform-auth';
import { runCli as runCliProgram } from '../../lib/cli/cli.program.js';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { tempDir } from '../support/credential-variants.js';

interface InProcessCli {
  /** Resolves once stdout satisfies `ready`. */
  until(ready: (stdout: string) => boolean): Promise<string>;
  /** Asks the command to stop, as SIGTERM would, and resolves with its exit code and output. */
  stop(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** The CLI in this process, as the bin runs it, with captured output and a stop signal of the test's own. */
function startCli(args: readonly string[], cwd = process.cwd()): InProcessCli {
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  let stopWith!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (stopWith = resolve));
  const code = runCliProgram(args, {
    stdout: {
      write: (text: string) => {
        stdout += text;
        for (const waiter of waiters) waiter();
        return true;
      },
    },
    stderr: { write: (text: string) => (stderr += text) },
    env: {},
    cwd,
    untilStopped: () => stopped,
  });
  return {
    until: (ready) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          if (ready(stdout)) resolve(stdout);
        };
        waiters.add(check);
        check();
        void code.then((exit) =>
          reject(new Error(`the command ended (${exit}) before it was ready:\n${stdout}\n${stderr}`)),
        );
      }),
    stop: async () => {
      stopWith('SIGTERM');
      return { code: await code, stdout, stderr };
    },
  };
}

async function runToEnd(args: readonly string[], cwd?: string): Promise<{ code: number; stderr: string }> {
  const cli = startCli(args, cwd);
  return cli.stop();
}

const json = (stdout: string) => {
  try {
    return JSON.parse(stdout) as EmulatorReport;
  } catch {
    return undefined;
  }
};

interface EmulatorReport {
  url: string;
  integration: { name: string; machineId: string };
  namedIntegrations: { integration: string; name: string; machineId: string; env: Record<string, string> }[];
  env: Record<string, string>;
}

/** An app with the default integration and the named ones, configured from the printed variables as `platformAuthConfig` would be. */
async function callEachIntegration(env: Record<string, string>, names: readonly string[]): Promise<number[]> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forRoot(readPlatformAuthEnv(env)),
      ...names.map((name) => PlatformAuthModule.forRoot({ name, ...readPlatformAuthEnv(env, name) })),
    ],
  }).compile();
  try {
    const statuses: number[] = [];
    for (const name of [undefined, ...names]) {
      const http = moduleRef.get<PlatformHttpService>(getPlatformHttpServiceToken(name));
      statuses.push((await firstValueFrom(http.get('/api/billing'))).status);
    }
    // Each integration has a token of its own.
    const tokens = await Promise.all(
      [undefined, ...names].map((name) => moduleRef.get<TokenProvider>(getTokenProviderToken(name)).getAccessToken()),
    );
    expect(new Set(tokens).size).toBe(tokens.length);
    return statuses;
  } finally {
    await moduleRef.close();
  }
}

describe('platform-auth emulator --integration', () => {
  it('registers several named integrations and reports each with its PLATFORM_<NAME>_ variables', async () => {
    const cli = startCli(['emulator', '--json', '--integration', 'billing', '--integration', 'audit-log']);
    const report = json(await cli.until((stdout) => json(stdout) !== undefined))!;
    try {
      expect(report.namedIntegrations.map((named) => [named.integration, named.name])).toEqual([
        ['billing', 'platform-auth emulator (billing)'],
        ['audit-log', 'platform-auth emulator (audit-log)'],
      ]);
      const billing = report.namedIntegrations[0];
      expect(Object.keys(billing.env).sort()).toEqual([
        'PLATFORM_BILLING_BASE_URL',
        'PLATFORM_BILLING_CERTIFICATE',
        'PLATFORM_BILLING_MACHINE_ID',
        'PLATFORM_BILLING_PRIVATE_KEY',
      ]);
      expect(billing.env.PLATFORM_BILLING_MACHINE_ID).toBe(billing.machineId);
      expect(report.env).toMatchObject({
        PLATFORM_MACHINE_ID: report.integration.machineId,
        PLATFORM_BILLING_BASE_URL: report.url,
        PLATFORM_AUDIT_LOG_MACHINE_ID: report.namedIntegrations[1].machineId,
      });
      const machineIds = [report.integration.machineId, ...report.namedIntegrations.map((named) => named.machineId)];
      expect(new Set(machineIds).size).toBe(3);
      expect(await callEachIntegration(report.env, ['billing', 'audit-log'])).toEqual([200, 200, 200]);
    } finally {
      expect((await cli.stop()).code).toBe(0);
    }
  });

  it('prints export lines a shell or a .env file reads, one block per integration', async () => {
    const cli = startCli(['emulator', '--integration', 'billing']);
    const stdout = await cli.until((text) => text.includes('Running until'));
    try {
      expect(stdout).toContain("Named integration 'billing' (forRoot({ name: 'billing' })):");
      const exported = stdout
        .split('\n')
        .filter((line) => line.startsWith('export ') || line.startsWith('# '))
        .join('\n');
      expect(exported).toMatch(/^# 'billing': platformAuthConfig\.forIntegration\('billing'\)$/m);
      const env = parseEnv(exported) as Record<string, string>;
      expect(Object.keys(env).filter((name) => name.startsWith('PLATFORM_BILLING_'))).toHaveLength(4);
      expect(await callEachIntegration(env, ['billing'])).toEqual([200, 200]);
    } finally {
      expect((await cli.stop()).code).toBe(0);
    }
  });

  it("registers a named integration's own keygen certificate with NAME=FILE", async () => {
    const files = tempDir();
    try {
      expect((await runToEnd(['keygen', '--out', files.dir])).code).toBe(0);
      const cli = startCli(['emulator', '--json', '--integration', `billing=${files.dir}/publickey.cer`]);
      const report = json(await cli.until((stdout) => json(stdout) !== undefined))!;
      try {
        expect(report.namedIntegrations[0].env).toEqual({
          PLATFORM_BILLING_BASE_URL: report.url,
          PLATFORM_BILLING_MACHINE_ID: report.namedIntegrations[0].machineId,
          PLATFORM_BILLING_PRIVATE_KEY_PATH: `${files.dir}/private-key.pem`,
          PLATFORM_BILLING_CERTIFICATE_PATH: `${files.dir}/publickey.cer`,
        });
        expect(await callEachIntegration(report.env, ['billing'])).toEqual([200, 200]);
      } finally {
        expect((await cli.stop()).code).toBe(0);
      }
    } finally {
      files.remove();
    }
  });

  it('refuses a name that is no integration name, the default one, a repeated one, and a missing file', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--integration', 'Billing'], /--integration takes NAME\[=FILE\], NAME lower-case letters.*got 'Billing'/],
      [['--integration', 'default'], /'default' is the integration the emulator always registers/],
      [['--integration', 'billing', '--integration', 'billing'], /'billing' is given more than once/],
      [['--integration', 'billing='], /--integration billing= needs a certificate file after '='/],
    ];
    for (const [args, message] of cases) {
      const result = await runToEnd(['emulator', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    const missing = await runToEnd(['emulator', '--integration', 'billing=no-such.cer']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read --integration billing='.*no-such\.cer': no such file/);
  });
});
