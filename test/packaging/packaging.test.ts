import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  engines: Record<string, string>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** A copy of the package, built on its own, so this test never rewrites the dist/ other tests may be reading. */
const packageDir = mkdtempSync(join(tmpdir(), 'platform-auth-package-'));

function runNode(script: string, type: 'module' | 'commonjs'): string {
  return execFileSync(
    process.execPath,
    [type === 'module' ? '--input-type=module' : '--input-type=commonjs', '-e', script],
    {
      cwd: packageDir,
      encoding: 'utf8',
    },
  );
}

describe('the published package', () => {
  beforeAll(() => {
    for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'lib']) {
      cpSync(join(root, entry), join(packageDir, entry), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(packageDir, 'node_modules'), 'dir');
    execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: packageDir,
    });
  }, 120_000);
  afterAll(() => rmSync(packageDir, { recursive: true, force: true }));

  it('states engines, ESM and types-first exports', () => {
    expect(pkg.engines.node).toBe('>=20.19');
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect(Object.keys(target), subpath).toEqual(['types', 'default']);
    }
    expect(pkg.exports['./package.json']).toBe('./package.json');
  });

  it('has every exports target on disk after the build', () => {
    for (const target of Object.values(pkg.exports)) {
      for (const file of typeof target === 'string' ? [target] : Object.values(target)) {
        expect(existsSync(join(packageDir, file)), file).toBe(true);
      }
    }
  });

  it('loads both entry points in a separate Node process by import() and by require()', () => {
    const imported = runNode(
      `const m = await import('nestjs-platform-auth'); const t = await import('nestjs-platform-auth/testing');
       console.log(typeof m.PlatformAuthModule, typeof m.AssertionSigner, typeof m.platformAuthConfig, typeof t.createTestCredentials);`,
      'module',
    );
    expect(imported.trim()).toBe('function function function function');
    const required = runNode(
      `const m = require('nestjs-platform-auth'); const t = require('nestjs-platform-auth/testing');
       console.log(typeof m.PlatformAuthModule, typeof t.createTestCredentials);`,
      'commonjs',
    );
    expect(required.trim()).toBe('function function');
  });

  it('exports exactly the public API: a new or removed name must be a deliberate change to the snapshot', () => {
    const names = runNode(
      `const out = {}; for (const entry of ['nestjs-platform-auth', 'nestjs-platform-auth/testing', 'nestjs-platform-auth/user', 'nestjs-platform-auth/terminus']) out[entry] = Object.keys(await import(entry)).sort();
       console.log(JSON.stringify(out));`,
      'module',
    );
    expect(JSON.parse(names)).toMatchSnapshot();
  });

  it('imports from lib/ only packages that package.json declares as dependencies or peers', () => {
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies ?? {})]);
    const builtins = new Set(builtinModules);
    const undeclared: string[] = [];
    for (const file of sourceFiles(join(root, 'lib'))) {
      const text = readFileSync(file, 'utf8');
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s+['"]([^'"]+)['"]/gm),
        ...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ];
      for (const match of specifiers) {
        const specifier = match[1];
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!declared.has(name)) undeclared.push(`${file}: ${specifier}`);
        if (specifier !== name && name.startsWith('@nestjs/')) undeclared.push(`${file}: deep import ${specifier}`);
      }
      for (const match of text.matchAll(/\bfrom\s+['"](\.[^'"]+)['"]/g)) {
        if (!match[1].endsWith('.js')) undeclared.push(`${file}: relative import without .js: ${match[1]}`);
      }
    }
    expect(undeclared).toEqual([]);
  });
});
