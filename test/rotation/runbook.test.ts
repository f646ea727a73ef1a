import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { parseJson, runCli, tempDir, type DoctorCheck } from '../cli/cli-harness.js';
import { eventually } from '../support/eventually.js';

interface KeygenReport {
  privateKeyPath: string;
  certificatePath: string;
  thumbprint: string;
  env: Record<string, string>;
  nextSteps: string[];
}

let platform: PlatformEmulator;
let files: ReturnType<typeof tempDir>;
beforeAll(async () => {
  platform = await PlatformEmulator.start();
  files = tempDir();
});
afterAll(async () => {
  await platform?.close();
  files?.remove();
});

async function doctor(env: Record<string, string>): Promise<DoctorCheck[]> {
  const result = await runCli(['doctor', '--json'], env);
  return parseJson<{ checks: DoctorCheck[] }>(result).checks;
}

const exchangeChecks = (checks: DoctorCheck[]) =>
  checks.filter((c) => c.id.startsWith('exchange') || c.id === 'next-pair').map((c) => [c.status, c.label, c.detail]);

describe('the rotation runbook of docs/operations.md, every step on the emulator', () => {
  it('keygen --next, deploy, doctor, portal upload, status() shows the switch, promote the files, doctor again', async () => {
    const dir = join(files.dir, 'runbook');
    // The pair in use today, registered in the portal.
    const current = parseJson<KeygenReport>(await runCli(['keygen', '--out', dir, '--json']));
    const { machineId } = platform.registerIntegration({
      certificatePem: readFileSync(current.certificatePath, 'utf8'),
    });

    // 1. Prepare the next pair beside the current one.
    const keygen = await runCli(['keygen', '--next', '--out', dir, '--json']);
    expect(keygen.code).toBe(0);
    const next = parseJson<KeygenReport>(keygen);
    expect(next.privateKeyPath).toBe(join(dir, 'next-private-key.pem'));
    expect(next.certificatePath).toBe(join(dir, 'next-publickey.cer'));
    expect(next.env).toEqual({
      PLATFORM_NEXT_PRIVATE_KEY_PATH: next.privateKeyPath,
      PLATFORM_NEXT_CERTIFICATE_PATH: next.certificatePath,
    });
    expect(next.nextSteps.join('\n')).toMatch(/replace the system integration's certificate/);
    expect(existsSync(current.privateKeyPath)).toBe(true);
    const text = await runCli(['keygen', '--next', '--out', join(files.dir, 'text')]);
    expect(text.stdout).toContain('PLATFORM_NEXT_PRIVATE_KEY_PATH=');
    expect((await runCli(['keygen', '--next', '--out', dir])).code).toBe(1); // never overwrites a next pair

    // 2. Deploy: the current pair and the next pair, files re-read.
    const env: Record<string, string> = {
      PLATFORM_BASE_URL: platform.url,
      PLATFORM_MACHINE_ID: machineId,
      PLATFORM_PRIVATE_KEY_PATH: join(dir, 'private-key.pem'),
      PLATFORM_CERTIFICATE_PATH: join(dir, 'publickey.cer'),
      ...next.env,
    };
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          baseUrl: platform.url,
          machineId,
          key: { privateKeyPath: env.PLATFORM_PRIVATE_KEY_PATH, certificatePath: env.PLATFORM_CERTIFICATE_PATH },
          next: { privateKeyPath: next.privateKeyPath, certificatePath: next.certificatePath },
          credentialsReloadIntervalMs: 1_000,
        }),
      ],
    }).compile();
    await moduleRef.init();
    try {
      const tokens = moduleRef.get(TokenProvider);
      const first = await tokens.getAccessToken();
      expect(tokens.status().credentials).toMatchObject({
        thumbprint: current.thumbprint,
        next: { thumbprint: next.thumbprint },
      });

      // 3. doctor checks both pairs: the platform accepts the current one; the next is not registered yet.
      expect(exchangeChecks(await doctor(env))).toEqual([
        ['pass', 'Next pair', expect.stringContaining(next.thumbprint)],
        [
          'pass',
          `Token exchange, current pair (${current.thumbprint.slice(0, 8)}…)`,
          expect.stringMatching(/accepts it/),
        ],
        [
          'pass',
          `Token exchange, next pair (${next.thumbprint.slice(0, 8)}…)`,
          expect.stringMatching(/not registered yet/),
        ],
      ]);

      // 4. The portal step.
      platform.replaceCertificate(machineId, readFileSync(next.certificatePath, 'utf8'));
      const rejectedBefore = platform.counters.exchanges.rejected;
      tokens.invalidate(first); // the next renewal, whenever it comes
      await tokens.getAccessToken();

      // 5. Watch status(): switched, within that exchange.
      expect(tokens.status().credentials).toMatchObject({
        thumbprint: next.thumbprint,
        switched: { from: current.thumbprint, to: next.thumbprint },
      });
      expect(platform.counters.exchanges.rejected - rejectedBefore).toBe(1);
      expect(exchangeChecks(await doctor(env))).toEqual([
        ['pass', 'Next pair', expect.any(String)],
        [
          'warn',
          `Token exchange, current pair (${current.thumbprint.slice(0, 8)}…)`,
          expect.stringMatching(/refused as not registered/),
        ],
        [
          'pass',
          `Token exchange, next pair (${next.thumbprint.slice(0, 8)}…)`,
          expect.stringMatching(/accepts the next pair now/),
        ],
      ]);

      // 6. Promote the files: the next pair becomes the current pair, and there is no next pair.
      renameSync(next.privateKeyPath, env.PLATFORM_PRIVATE_KEY_PATH);
      renameSync(next.certificatePath, env.PLATFORM_CERTIFICATE_PATH);
      await eventually(() => {
        const credentials = tokens.status().credentials;
        expect(credentials.switched).toBeUndefined();
        expect(credentials.next).toBeUndefined();
        expect(credentials.reload.state).toBe('watching');
      });
      const rejected = platform.counters.exchanges.rejected;
      tokens.invalidate(await tokens.getAccessToken());
      await tokens.getAccessToken();
      expect(platform.counters.exchanges.rejected).toBe(rejected);
      const { PLATFORM_NEXT_PRIVATE_KEY_PATH: _key, PLATFORM_NEXT_CERTIFICATE_PATH: _certificate, ...promoted } = env;
      const after = await doctor(promoted);
      expect(after.filter((c) => c.status === 'fail')).toEqual([]);
      expect(exchangeChecks(after)).toEqual([['pass', 'Token exchange', expect.stringMatching(/issued/)]]);
    } finally {
      await moduleRef.close();
    }
  });
});
