import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformHttpService } from 'nestjs-platform-auth';
import { createTestCertificates } from 'nestjs-platform-auth/testing';
import { runCli, startCli, tempDir, untilJson } from './cli-harness.js';

interface Report {
  url: string;
  integrationsFile?: { path: string; count: number };
}

/** One integration of the file, called as a forRoot app would: a token exchange and a protected route. */
async function callAs(url: string, machineId: string, privateKey: string, certificate: string): Promise<number> {
  const moduleRef = await Test.createTestingModule({
    imports: [PlatformAuthModule.forRoot({ baseUrl: url, machineId, key: { privateKey, certificate } })],
  }).compile();
  try {
    return (await firstValueFrom(moduleRef.get(PlatformHttpService).get('/api/billing'))).status;
  } finally {
    await moduleRef.close();
  }
}

describe('platform-auth emulator --integrations-file', () => {
  it('registers every row of the file, PEMs and certificate files beside it, and reports the count', async () => {
    const files = tempDir();
    try {
      const { privateKeyPem, certificatePems } = await createTestCertificates(1_001);
      files.write('last.cer', certificatePems[1_000]);
      const rows = [
        ...certificatePems
          .slice(0, 1_000)
          .map((certificatePem, index) => ({ certificatePem, machineId: `t-${index}` })),
        { certificateFile: 'last.cer', machineId: 't-last', name: 'from a file' },
      ];
      const path = files.write('tenants.json', JSON.stringify(rows));
      const cli = startCli(['emulator', '--json', '--integrations-file', 'tenants.json'], {}, { cwd: files.dir });
      const report = await untilJson<Report>(cli);
      try {
        expect(report.integrationsFile).toEqual({ path, count: 1_001 });
        expect(await callAs(report.url, 't-999', privateKeyPem, certificatePems[999])).toBe(200);
        expect(await callAs(report.url, 't-last', privateKeyPem, certificatePems[1_000])).toBe(200);
      } finally {
        expect((await cli.stop()).code).toBe(0);
      }
    } finally {
      files.remove();
    }
  });

  it('refuses a file that is not an array of rows, naming the row and what is wrong', async () => {
    const files = tempDir();
    try {
      const { certificatePems } = await createTestCertificates(1);
      const cases: Array<[unknown, RegExp]> = [
        [{ integrations: [] }, /must hold a JSON array of integrations/],
        [
          [{ certificatePem: certificatePems[0] }, 'x'],
          /\[1\] must be an object with certificatePem or certificateFile/,
        ],
        [[{ certificatePem: certificatePems[0], key: 'x' }], /\[0\] has unknown field\(s\) key; allowed:/],
        [[{ machineId: 'a' }], /\[0\] needs exactly one of certificatePem and certificateFile/],
        [[{ certificatePem: certificatePems[0], machineId: 7 }], /\[0\]: machineId must be a non-empty string/],
        [[{ certificateFile: 'missing.cer' }], /cannot read .*\[0\] 'missing.cer'/],
        [
          [{ certificatePem: certificatePems[0] }, { certificatePem: certificatePems[0] }],
          /cannot register .*registerIntegrations\[1\]: a system integration with certificate thumbprint/,
        ],
      ];
      for (const [content, message] of cases) {
        files.write('tenants.json', JSON.stringify(content));
        const result = await runCli(['emulator', '--integrations-file', 'tenants.json'], {}, { cwd: files.dir });
        expect(result.code, JSON.stringify(content).slice(0, 80)).toBe(1);
        expect(result.stderr).toMatch(message);
      }
      files.write('tenants.json', '[{');
      expect(
        (await runCli(['emulator', '--integrations-file', 'tenants.json'], {}, { cwd: files.dir })).stderr,
      ).toMatch(/--integrations-file '.*tenants\.json' is not JSON/);
    } finally {
      files.remove();
    }
  });
});
