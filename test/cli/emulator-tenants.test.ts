import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformTenants, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { runCli, startCli, tempDir, untilJson, type RunningCli } from './cli-harness.js';

interface EmulatorReport {
  url: string;
  namedIntegrations: { integration: string }[];
  tenants: { tenant: string; name: string; machineId: string; settings: PlatformAuthOptions }[];
  env: Record<string, string>;
}

const running: RunningCli[] = [];
afterAll(() => Promise.all(running.map((cli) => cli.stop())));

/** An app whose tenants are the settings the emulator printed, and the status of a call as each. */
async function callAsTenants(settings: Record<string, PlatformAuthOptions>): Promise<number[]> {
  const moduleRef = await Test.createTestingModule({
    imports: [PlatformAuthModule.forTenants({ resolve: (id) => Promise.resolve(settings[id]) })],
  }).compile();
  try {
    const tenants = moduleRef.get(PlatformTenants);
    const statuses: number[] = [];
    for (const id of Object.keys(settings)) {
      const tenant = await tenants.get(id);
      statuses.push((await firstValueFrom(tenant.http.get('/api/billing'))).status);
    }
    return statuses;
  } finally {
    await moduleRef.close();
  }
}

describe('platform-auth emulator --tenant', () => {
  it("prints a tenant as the settings forTenants' resolve returns, never as PLATFORM_<ID>_ variables, and they call the platform", async () => {
    const files = tempDir();
    try {
      const keygen = await runCli(['keygen', '--out', files.dir, '--json']);
      const { certificatePath, privateKeyPath } = JSON.parse(keygen.stdout) as Record<string, string>;
      const args = [
        'emulator',
        '--tenant',
        'initech',
        '--tenant',
        `acme=${certificatePath}`,
        '--integration',
        'billing',
      ];
      const cli = startCli([...args, '--json']);
      running.push(cli);
      const report = await untilJson<EmulatorReport>(cli);
      expect(report.tenants, JSON.stringify(report)).toBeDefined();
      expect(report.namedIntegrations.map((named) => named.integration)).toEqual(['billing']);
      expect(Object.keys(report.env).filter((name) => /INITECH|ACME/.test(name))).toEqual([]);
      const [initech, acme] = report.tenants;
      expect([initech.tenant, initech.name, acme.tenant]).toEqual([
        'initech',
        'platform-auth emulator (initech)',
        'acme',
      ]);
      expect(initech.settings).toEqual({
        baseUrl: report.url,
        machineId: initech.machineId,
        key: {
          privateKey: expect.stringContaining('-----BEGIN PRIVATE KEY-----\n') as unknown,
          certificate: expect.stringContaining('-----BEGIN CERTIFICATE-----\n') as unknown,
        },
      });
      expect(acme.settings).toEqual({
        baseUrl: report.url,
        machineId: acme.machineId,
        key: { privateKeyPath, certificatePath },
      });
      expect(await callAsTenants({ initech: initech.settings, acme: acme.settings })).toEqual([200, 200]);
      await cli.stop();

      const text = startCli(args);
      running.push(text);
      await text.until((stdout) => stdout.includes('Running until'));
      expect(text.stdout()).not.toMatch(/PLATFORM_(INITECH|ACME)_/);
      expect(text.stdout()).toContain("Tenant 'acme': what forTenants' resolve('acme') returns:");
      expect(text.stdout()).toContain(`"privateKeyPath": "${privateKeyPath}"`);
    } finally {
      files.remove();
    }
  });

  it('--state keeps a tenant as a tenant across a restart', async () => {
    const files = tempDir();
    try {
      const state = `${files.dir}/emulator.json`;
      const first = startCli(['emulator', '--json', '--tenant', 'initech', '--state', state]);
      running.push(first);
      const before = (await untilJson<EmulatorReport>(first)).tenants;
      await first.stop();
      const second = startCli(['emulator', '--json', '--state', state]);
      running.push(second);
      const after = await untilJson<EmulatorReport>(second);
      expect(after.tenants.map((tenant) => [tenant.tenant, tenant.machineId])).toEqual([
        ['initech', before[0].machineId],
      ]);
      expect(after.tenants[0].settings.key).toEqual({
        certificate: expect.stringContaining('BEGIN CERTIFICATE') as unknown,
      });
      const again = await runCli(['emulator', '--integration', 'initech', '--state', state]);
      expect([again.code, again.stderr]).toEqual([2, expect.stringContaining("--state keeps 'initech' as a tenant")]);
    } finally {
      files.remove();
    }
  });

  it('takes each name once across --integration and --tenant', async () => {
    const result = await runCli(['emulator', '--integration', 'acme', '--tenant', 'acme']);
    expect([result.code, result.stderr]).toEqual([
      2,
      expect.stringContaining("--tenant: 'acme' is given more than once"),
    ]);
  });
});
