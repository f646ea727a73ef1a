import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

  it('keeps the main entry to at most 60 names, and every type its signatures use is one of them', () => {
    const report = readFileSync(join(packageRoot, 'api/nestjs-platform-auth.api.md'), 'utf8');
    const declared = [
      ...report.matchAll(/^(export )?(?:declare )?(?:abstract )?(?:class|interface|type|function|const|enum) (\w+)/gm),
    ];
    const exported = declared.filter(([, exportedAs]) => exportedAs).map(([, , name]) => name);
    // A check of the checker: the report lists the module, its options and its errors.
    expect(exported).toEqual(
      expect.arrayContaining(['PlatformAuthModule', 'PlatformAuthOptions', 'PlatformAuthError']),
    );
    expect(declared.filter(([, exportedAs]) => !exportedAs).map(([, , name]) => name)).toEqual([]);
    expect(exported.length).toBeLessThanOrEqual(60);
  });
});
