import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../support/built-package.js';

const run = promisify(execFile);
const lib = join(packageRoot, 'lib');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/*
 * package.json says `"sideEffects"` only for the bin: loading the library changes nothing outside its own modules.
 * The two builds (dist/ and dist/cjs/) meet through injection tokens from the global symbol registry instead.
 */
describe('process-global state', () => {
  it('loading both builds of every entry point leaves globalThis as it was', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import 'reflect-metadata';
        import { createRequire } from 'node:module';
        for (const peer of ['@nestjs/common', '@nestjs/core', '@nestjs/axios', '@nestjs/terminus']) await import(peer);
        const require = createRequire(process.cwd() + '/package.json');
        const before = Reflect.ownKeys(globalThis);
        for (const entry of ['', '/testing', '/testing/msw', '/user', '/terminus', '/outbox']) {
          await import('nestjs-platform-auth' + entry);
          require('nestjs-platform-auth' + entry);
        }
        console.log(JSON.stringify(Reflect.ownKeys(globalThis).filter((key) => !before.includes(key)).map(String)));
        `,
      ],
      { cwd: packageRoot },
    );
    expect(JSON.parse(stdout)).toEqual([]);
  });

  it('no file of lib/ keeps state on globalThis, exports a variable to reassign or runs a static block', () => {
    const found: string[] = [];
    for (const file of sourceFiles(lib)) {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, what] of [
        [/\bglobalThis\s*(\[|as\b)/, 'globalThis as a store'],
        [/^export let\b/m, 'an exported let'],
        [/^\s*static\s*\{/m, 'a static block'],
      ] as const) {
        if (pattern.test(text)) found.push(`${relative(lib, file)}: ${what}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('package.json names the only file with an effect on import: the bin', () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { sideEffects: unknown };
    expect(pkg.sideEffects).toEqual(['./dist/cli/main.js']);
  });
});
