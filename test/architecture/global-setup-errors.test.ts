import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const config = 'test/fixtures/global-setup-error/vitest.config.ts';
const cache = mkdtempSync(join(tmpdir(), 'platform-auth-vitest-cache-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

/** `vitest run` of the fixture in a process of its own, outside this run's worker: its exit code and its output. */
function runFixture(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(VITEST|TEST$)/.test(key)));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', '--config', config],
      { cwd: root, env: { ...inherited, FIXTURE_CACHE: cache, NO_COLOR: '1', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}

/**
 * The suite keeps Vitest's module cache on (vitest.config.ts); an error its global set-up throws must still reach
 * the console as itself, from the cache as on a first run.
 */
describe('an error thrown in a global set-up, with the module cache on', () => {
  it('is reported as itself, on the first run and on the next, which reads the set-up from the cache', async () => {
    for (const run of ['first', 'cached']) {
      const { code, output } = await runFixture({});
      expect(code, `${run} run`).not.toBe(0);
      expect(output, `${run} run`).toContain('Error: the fixture build failed: see above');
      expect(output, `${run} run`).not.toContain('charCodeAt');
    }
  });

  // The control: the same set-up throwing its error as it is. Should Vitest report it as itself one day, this fails
  // and withPlainStack can go.
  it('without withPlainStack, the run that reads the set-up from the cache reports charCodeAt instead', async () => {
    await runFixture({ RAW_STACK: '1' });
    const { code, output } = await runFixture({ RAW_STACK: '1' });
    expect(code).not.toBe(0);
    expect(output).toContain('code.charCodeAt is not a function');
    expect(output).not.toContain('the fixture build failed');
  });
});
