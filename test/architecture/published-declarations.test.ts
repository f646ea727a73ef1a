import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../support/built-package.js';
import { scratchProject, typeCheckScratch } from '../support/docs-blocks.js';

/** The classes the composition root builds and apps only inject. */
const BUILT_BY_THE_MODULE = ['TokenProvider', 'PlatformFetch', 'PlatformAuthInterceptor'];

/**
 * Compiles `code` as an app's module against the declarations the global set-up built (dist/, as `npm pack` ships
 * them), not lib/: what the declarations leave out (`@internal`) is the point. Returns tsc's error lines.
 */
async function compileAgainstDeclarations(code: string, options: Record<string, unknown> = {}): Promise<string[]> {
  const scratch = scratchProject();
  try {
    writeFileSync(join(scratch.dir, 'app.ts'), code);
    const output = await typeCheckScratch(scratch.dir, ['app.ts'], {
      types: ['node'],
      paths: { 'nestjs-platform-auth': [join(packageRoot, 'dist/index.d.ts')] },
      ...options,
    });
    return output
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  } finally {
    scratch.remove();
  }
}

describe('the published declarations', () => {
  it('offer no constructor to call for what the module builds: apps inject those', async () => {
    const lines = BUILT_BY_THE_MODULE.map((name, i) => `export const made${i} = new ${name}();`);
    const errors = await compileAgainstDeclarations(
      [`import { ${BUILT_BY_THE_MODULE.join(', ')} } from 'nestjs-platform-auth';`, ...lines, ''].join('\n'),
    );
    // One error per class, on its own line, and nothing else: the import itself resolves and type-checks.
    expect(errors).toHaveLength(BUILT_BY_THE_MODULE.length);
    BUILT_BY_THE_MODULE.forEach((name, i) =>
      expect(errors[i]).toMatch(
        new RegExp(`^app\\.ts\\(${i + 2},\\d+\\): error TS2673: Constructor of class '${name}' is private`),
      ),
    );
  }, 60_000);

  it('still let an app use what it injects', async () => {
    const errors = await compileAgainstDeclarations(
      [
        "import type { PlatformFetch, TokenProvider } from 'nestjs-platform-auth';",
        'export async function call(tokens: TokenProvider, platformFetch: PlatformFetch): Promise<number> {',
        '  await tokens.getAccessToken();',
        "  return (await platformFetch.fetch('/api/billing')).status;",
        '}',
        '',
      ].join('\n'),
    );
    expect(errors).toEqual([]);
  }, 60_000);

  it('compile in an app with the DOM library and skipLibCheck off', async () => {
    // No `lib`: TypeScript's default, the DOM's included, as in the Nest CLI's tsconfig. The DOM's RequestInit names
    // no dispatcher, which the declarations once read from it.
    const errors = await compileAgainstDeclarations(
      [
        "import type { PlatformDispatcher, PlatformFetch } from 'nestjs-platform-auth';",
        'export const dispatcherOf = (platformFetch: PlatformFetch): PlatformDispatcher => platformFetch.dispatcher;',
        '',
      ].join('\n'),
      { lib: undefined, skipLibCheck: false },
    );
    // Other packages' declarations are theirs to keep (skipLibCheck is off for every package): ours and the app's.
    const ours = (line: string) =>
      line.startsWith('app.ts') || (line.includes('dist/') && !line.includes('node_modules'));
    expect(errors.filter(ours)).toEqual([]);
  }, 60_000);
});
