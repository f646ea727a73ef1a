import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { startHoldingProxy } from '../support/holding-proxy.js';
import { root, startBin, tempDir, untilJson } from './cli-harness.js';

// The other CLI tests call runCli(argv, io) in this process; these few run the built bin as a user's shell does, for
// what only a real process shows: the #! line, Node's own option parsing, signals and file modes.

let files: ReturnType<typeof tempDir>;

beforeAll(() => {
  files = tempDir();
});

afterAll(() => files?.remove());

describe('the platform-auth bin', () => {
  it('prints the package version and the general help', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(await startBin(['--version']).result).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
    const help = await startBin(['--help']).result;
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: platform-auth <command> \[options\]$/m);
  });

  it('parses --env-file after the command itself (Node would take it for its own flag), exit 1 for a missing file', async () => {
    const result = await startBin(['doctor', '--env-file', '.env.missing'], { cwd: files.dir }).result;
    expect(result.stderr).not.toContain('node:');
    expect(result.stderr).toContain(`cannot read --env-file '${files.dir}/.env.missing'`);
    expect(result.code).toBe(1);
  });

  it('keygen writes the private key readable by its owner only (mode 0600)', async () => {
    const out = join(files.dir, 'keys');
    const result = await startBin(['keygen', '--out', out, '--json']).result;
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { privateKeyPath: string; certificatePath: string };
    expect(report.privateKeyPath).toBe(join(out, 'private-key.pem'));
    expect(statSync(report.privateKeyPath).mode & 0o777).toBe(0o600);
    expect(statSync(report.certificatePath).isFile()).toBe(true);
  });

  it('runs the emulator until SIGINT, then closes it and exits 0', async () => {
    const emulator = startBin(['emulator', '--json']);
    const report = await untilJson<{ url: string; inspectorUrl: string }>(emulator);
    expect((await fetch(report.inspectorUrl)).status).toBe(200);
    const stopped = await emulator.stop('SIGINT');
    expect(stopped).toMatchObject({ code: 0, stderr: expect.stringContaining('SIGINT: emulator closed.') as unknown });
    await expect(fetch(report.url)).rejects.toThrow();
  });

  it('exits 0 when its reader leaves before it writes (| head -1), the fault queued all the same', async () => {
    const platform = await PlatformEmulator.start({ control: true });
    const holding = await startHoldingProxy(platform.url);
    try {
      // The emulator queues the fault and answers; the answer waits while the bin's reader goes away.
      const answer = holding.holdNextAnswer();
      const bin = startBin(['emulator', 'fault', '--target', 'api', '--status', '503', '--url', holding.url]);
      await answer.arrived;
      bin.closeStdout!();
      answer.release();
      const result = await bin.result;
      expect(result.stderr).not.toContain('EPIPE');
      expect(result.code).toBe(0);
      expect((await fetch(`${platform.url}/api/billing`)).status).toBe(503);
    } finally {
      await holding.close();
      await platform.close();
    }
  });
});
