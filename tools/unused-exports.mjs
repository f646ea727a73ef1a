#!/usr/bin/env node
// Lists every export of lib/**/*.ts that no other file imports (lib/, test/, bench/, soak/, sample-app/, tools/) and
// that no entry point of package.json re-exports, with what to do: `unexport` when its own file uses it, `delete` when
// nothing does. Exits 1 when it lists any. It reads import statements as text (relative paths, dist/ paths and the
// package's own entry points), so a name reached another way (a computed import path) shows as unused: check before
// deleting, and let `npx tsc -p tsconfig.json --noEmit` (noUnusedLocals) confirm each change.
//   node tools/unused-exports.mjs
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['lib', 'test', 'bench', 'soak', 'sample-app', 'tools'];

/** The package's entry points (package.json `exports`), by specifier, as lib/ sources. */
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const ENTRIES = Object.fromEntries(
  Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === 'object')
    .map(([path, target]) => [
      path === '.' ? pkg.name : `${pkg.name}/${path.slice(2)}`,
      target.import.default.replace(/^\.\/dist\//, 'lib/').replace(/\.js$/, '.ts'),
    ]),
);
const entryFiles = new Set(Object.values(ENTRIES));

function sources(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist') return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|cts|mjs|cjs|js)$/.test(name) ? [path] : [];
  });
}

const withoutComments = (text) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
const names = (list) =>
  list
    .split(',')
    .map((item) => item.trim().replace(/^type\s+/, ''))
    .filter(Boolean)
    .map((item) => {
      const [name, alias] = item.split(/\s+as\s+/);
      return { name, alias: alias ?? name };
    });

/** The lib/ source `specifier` names from `file`: relative, through dist/, or an entry point of the package. */
function target(file, specifier) {
  if (ENTRIES[specifier]) return ENTRIES[specifier];
  if (!specifier.startsWith('.')) return undefined;
  const path = resolve(dirname(file), specifier);
  for (const candidate of [
    path.replace(/\.js$/, '.ts'),
    path.replace(/\.mjs$/, '.mts'),
    path,
    join(path, 'index.ts'),
  ]) {
    const rel = relative(root, candidate);
    if (existsSync(candidate) && statSync(candidate).isFile()) return rel;
    const built = /^dist\/(?:cjs\/)?(.*)\.(?:c?js|ts)$/.exec(rel);
    if (built && existsSync(join(root, 'lib', `${built[1]}.ts`))) return `lib/${built[1]}.ts`;
  }
  return undefined;
}

const files = FOLDERS.flatMap((folder) => sources(join(root, folder)));
const texts = new Map(files.map((file) => [file, withoutComments(readFileSync(file, 'utf8'))]));

/** file → name → how it is exported (`local`, or re-exported `from` another file as `name`). */
const exported = new Map();
/** file → files whose names it re-exports all of (`export * from`). */
const starFrom = new Map();
for (const [file, text] of texts) {
  const rel = relative(root, file);
  if (!rel.startsWith('lib/') || !rel.endsWith('.ts')) continue;
  const own = new Map();
  const declaration =
    /^export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;
  for (const [, name] of text.matchAll(declaration)) own.set(name, { local: true });
  for (const [, list] of text.matchAll(/^export\s+(?:declare\s+)?const\s+\{([^}]*)\}\s*=/gm)) {
    for (const { alias } of names(list.replace(/\w+\s*:\s*/g, (key) => `${key.replace(/\s*:\s*$/, '')} as `))) {
      own.set(alias, { local: true });
    }
  }
  for (const [, list, specifier] of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*(?:from\s*['"]([^'"]+)['"])?/g)) {
    const from = specifier && target(file, specifier);
    for (const { name, alias } of names(list)) own.set(alias, from ? { from, name } : { local: true });
  }
  starFrom.set(
    rel,
    [...text.matchAll(/export\s+\*\s+from\s*['"]([^'"]+)['"]/g)].map(([, spec]) => target(file, spec)).filter(Boolean),
  );
  exported.set(rel, own);
}

/** file → name → the other files that import it. */
const importers = new Map();
function use(file, name, by) {
  if (!importers.has(file)) importers.set(file, new Map());
  const byName = importers.get(file);
  if (!byName.has(name)) byName.set(name, new Set());
  byName.get(name).add(by);
}
for (const [file, text] of texts) {
  const by = relative(root, file);
  for (const [, clause, specifier] of text.matchAll(
    /(?:import|export)\s+(?:type\s+)?([\s\S]*?)\s+from\s*['"]([^'"]+)['"]/g,
  )) {
    const from = target(file, specifier);
    if (!from?.startsWith('lib/')) continue;
    const list = /\{([^}]*)\}/.exec(clause);
    if (list) for (const { name } of names(list[1])) use(from, name, by);
    const namespace = /\*\s+as\s+([\w$]+)/.exec(clause);
    if (namespace)
      for (const [, name] of text.matchAll(new RegExp(`\\b${namespace[1]}\\.([\\w$]+)`, 'g'))) use(from, name, by);
    if (/^[\w$]+/.test(clause.trim()) && !clause.trim().startsWith('type ')) use(from, 'default', by);
  }
  // `await import('…')`: every exported name the importing file mentions.
  for (const [, specifier] of text.matchAll(/import\(\s*['"`]([^'"`]+)['"`]\s*\)/g)) {
    const from = target(file, specifier);
    for (const name of exported.get(from)?.keys() ?? [])
      if (new RegExp(`\\b${name}\\b`).test(text)) use(from, name, by);
  }
}
// A name imported from a barrel that has it through `export *` is a use of the file it comes from.
for (const [barrel, froms] of starFrom) {
  for (const from of froms)
    for (const [name, by] of importers.get(barrel) ?? []) for (const b of by) use(from, name, b);
}

/** Whether an entry point makes `name` of `file` public, through any chain of re-exports. */
const publicNames = new Set();
function markPublic(file, name, seen = new Set()) {
  const key = `${file}#${name}`;
  if (!file || seen.has(key)) return;
  seen.add(key);
  publicNames.add(key);
  const how = exported.get(file)?.get(name);
  if (how?.from) markPublic(how.from, how.name, seen);
  else if (!how) for (const from of starFrom.get(file) ?? []) markPublic(from, name, seen);
}
for (const entry of entryFiles) {
  for (const name of exported.get(entry)?.keys() ?? []) markPublic(entry, name);
  for (const from of starFrom.get(entry) ?? [])
    for (const name of exported.get(from)?.keys() ?? []) markPublic(from, name);
}

const rows = [];
for (const [file, own] of exported) {
  if (entryFiles.has(file)) continue;
  const text = texts.get(join(root, file));
  for (const [name, how] of own) {
    if (how.from || publicNames.has(`${file}#${name}`)) continue;
    const others = [...(importers.get(file)?.get(name) ?? [])].filter((by) => by !== file);
    if (others.length > 0) continue;
    const mentions = text.match(new RegExp(`(?<![\\w$])${name.replace(/\$/g, '\\$')}(?![\\w$])`, 'g'))?.length ?? 0;
    rows.push(`${mentions > 1 ? 'unexport' : 'delete'}\t${file}\t${name}`);
  }
}
for (const row of rows.sort()) console.log(row);
if (rows.length > 0) {
  console.error(`unused-exports: ${rows.length} export(s) with no importer outside their file and no entry point`);
  process.exitCode = 1;
}
