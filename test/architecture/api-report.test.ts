import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../support/built-package.js';

const run = promisify(execFile);

describe('the public API', () => {
  it('is what api/*.api.md records: every name, type and member signature, and no internal type in a signature', async () => {
    // API Extractor reads the declarations the global set-up built; `npm test` installs tools/api from its lockfile.
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
