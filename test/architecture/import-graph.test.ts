import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const lib = fileURLToPath(new URL('../../lib', import.meta.url));
const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, string | { import?: { default?: string } }>;
};
/** The source of each entry point of `package.json` `exports`: `lib/index.ts`, `lib/terminus/index.ts`, … */
const entryPoints = Object.values(packageJson.exports).flatMap((target) => {
  const built = typeof target === 'string' ? undefined : target.import?.default;
  return built === undefined ? [] : [join(lib, built.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'))];
});

/**
 * The layers of lib/, lowest first (docs/architecture.md): each rank holds one or more layers, each layer folders or
 * top-level files. A file may import at run time only from its own layer or a lower rank; type-only imports are
 * free. Layers on one rank (telemetry and store; terminus, user and testing) do not import each other.
 */
const LAYERS: readonly Readonly<Record<string, readonly string[]>>[] = [
  {
    leaf: [
      'util',
      'platform-auth.errors.ts',
      'platform-auth.tenant-errors.ts',
      'platform-auth.clock.ts',
      'platform-auth.constants.ts',
      'platform-auth.observer.ts',
    ],
  },
  { options: ['options'] },
  { credentials: ['credentials'] },
  { token: ['token'] },
  { telemetry: ['telemetry'], store: ['store'] },
  { calls: ['calls'] },
  { http: ['http'] },
  {
    composition: [
      'platform-auth.configuration.ts',
      'platform-auth.wiring.ts',
      'platform-auth.builder.ts',
      'platform-auth.startup-line.ts',
      'platform-auth.module-helpers.ts',
      'platform-auth.module-definition.ts',
      'platform-auth.startup-problems.ts',
      'platform-auth.module.ts',
      'platform-auth.integrations.ts',
      'index.ts',
      'tenants',
    ],
  },
  { terminus: ['terminus'], user: ['user'], testing: ['testing'], outbox: ['outbox'] },
  { cli: ['cli'] },
];

function layerOf(file: string): { rank: number; name: string } {
  const first = relative(lib, file).split('/')[0];
  for (const [rank, layers] of LAYERS.entries()) {
    for (const [name, members] of Object.entries(layers)) if (members.includes(first)) return { rank, name };
  }
  throw new Error(`${relative(lib, file)} is in no layer: add it to LAYERS and to docs/architecture.md`);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** A statement `import … from '…'` / `export … from '…'` / `import '…'`, one at a time (never across a `;`). */
const STATEMENT = /^\s*(import|export)\s+(type\s+)?([^;]*?)\s*(?:from\s+)?'(\.[^']+)';/gm;

/**
 * The relative imports of `file` that exist at run time (not `import type`, and not a list of `type` names only), or
 * with `withTypes` every relative import.
 */
function runtimeImports(file: string, withTypes = false): string[] {
  const text = readFileSync(file, 'utf8');
  const targets: string[] = [];
  for (const [, , typeOnly, clause, specifier] of text.matchAll(STATEMENT)) {
    if (withTypes) {
      targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      continue;
    }
    if (typeOnly) continue;
    const names = /^\{([\s\S]*)\}$/.exec(clause.trim())?.[1];
    const allTypes =
      names !== undefined &&
      names
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean)
        .every((name) => name.startsWith('type '));
    if (allTypes) continue;
    targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
  }
  return targets;
}

const files = sourceFiles(lib);
const graph = new Map(files.map((file) => [file, runtimeImports(file)]));

describe('the import graph of lib/', () => {
  it('reads real imports (a check of the checker): the wiring imports the token cache at run time', () => {
    expect(graph.get(join(lib, 'platform-auth.wiring.ts'))).toContain(join(lib, 'token/token.cache.ts'));
    expect(graph.get(join(lib, 'token/token.provider.ts'))).not.toContain(join(lib, 'token/token.cache.ts'));
  });

  it('has no runtime import cycle', () => {
    const cycles: string[][] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') cycles.push(stack.slice(stack.indexOf(target)).map((f) => relative(lib, f)));
        else if (!state.has(target) && graph.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('imports only downwards: no layer imports a higher one, or its neighbour on the same rank, at run time', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      for (const target of targets) {
        const to = layerOf(target);
        if (to.rank > from.rank || (to.rank === from.rank && to.name !== from.name))
          upward.push(`${relative(lib, file)} -> ${relative(lib, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps the call engine free of its clients: http/engine/ imports nothing from http/clients/, not even a type', () => {
    const engine = files.filter((file) => relative(lib, file).startsWith('http/engine/'));
    expect(engine.length).toBeGreaterThan(3);
    const clients = join(lib, 'http/clients');
    const inward = engine.flatMap((file) =>
      runtimeImports(file, true)
        .filter((target) => target.startsWith(`${clients}/`))
        .map((target) => `${relative(lib, file)} -> ${relative(lib, target)}`),
    );
    expect(inward).toEqual([]);
  });

  it('lets options/ import nothing above it, not even a type: every layer reads the options', () => {
    const options = files.filter((file) => layerOf(file).name === 'options');
    expect(options.length).toBeGreaterThan(5);
    const upward = options.flatMap((file) =>
      runtimeImports(file, true)
        .filter((target) => layerOf(target).rank > layerOf(file).rank)
        .map((target) => `${relative(lib, file)} -> ${relative(lib, target)}`),
    );
    expect(upward).toEqual([]);
  });
});

describe('the outbox stands on the public surface, as a package of its own would', () => {
  const outbox = join(lib, 'outbox');
  const inOutbox = (file: string) => file.startsWith(`${outbox}/`);

  it('imports the rest of the package only through its entry points, types included', () => {
    expect(entryPoints).toContain(join(lib, 'index.ts'));
    expect(entryPoints).toContain(join(lib, 'outbox/index.ts'));
    const imported = files.filter(inOutbox).flatMap((file) =>
      runtimeImports(file, true)
        .filter((target) => !inOutbox(target))
        .map((target) => ({ from: relative(lib, file), to: relative(lib, target) })),
    );
    // A check of the checker: the outbox does import the main entry point.
    expect(imported).toContainEqual(expect.objectContaining({ to: 'index.ts' }));
    expect(imported.filter(({ to }) => !entryPoints.includes(join(lib, to)))).toEqual([]);
  });

  it('is named by no file of lib/ outside lib/outbox/', () => {
    const naming = files.filter((file) => !inOutbox(file) && /outbox/i.test(readFileSync(file, 'utf8')));
    expect(files.filter(inOutbox).length).toBeGreaterThan(5);
    expect(naming.map((file) => relative(lib, file))).toEqual([]);
  });
});
