import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../support/built-package.js';

const run = promisify(execFile);

describe('the public API', () => {
  // API Extractor has its own lockfile (it brings the TypeScript 6 compiler API): installed from it on the first run,
  // so that this file passes under a plain `npx vitest run` as under `npm test`. A no-op once tools/api is installed.
  beforeAll(() => run('npm', ['run', 'api:install', '--silent'], { cwd: packageRoot }));

  it('is what api/*.api.md records: every name, type and member signature, and no internal type in a signature', async () => {
    // API Extractor reads the declarations the global set-up built.
    const result = await run(process.execPath, [join(packageRoot, 'tools/api/api-report.mjs')], {
      cwd: packageRoot,
    }).then(
      ({ stdout }) => ({ ok: true, output: stdout }),
      (error: { stdout?: string; stderr?: string }) => ({
        ok: false,
        output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      }),
    );
    expect(result.output).toContain('public API matches');
    expect(result.ok, result.output).toBe(true);
  });
});
