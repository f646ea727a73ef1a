// The CommonJS build, for apps that load the package with require(): Nest 11 apps as the Nest CLI makes them, and
// Jest, whose module loader cannot require() an ES module on Node 20. Run after `tsc -p tsconfig.build.json`; see
// docs/compatibility.md for what it contains and why.
//
// - dist/cjs/** mirrors dist/** file for file (the command line, ESM only, left out), so the four entry points share
//   one copy of every class, as they do in the ES module build. Its input is tsc's JavaScript, so Nest's decorator
//   metadata is already there (esbuild cannot emit it from TypeScript).
// - jose and oauth4webapi are ES modules only: each is bundled once into dist/cjs/vendor/, with its licence beside it,
//   and required from there. Every other package stays an ordinary require() of the user's installed copy.
// - import() of an optional peer (redis, @opentelemetry/api) becomes require(): Jest without
//   --experimental-vm-modules cannot run import() inside a CommonJS module.
// - dist/cjs/package.json says "type": "commonjs", so Node and TypeScript read the .js and the .d.ts files beside it
//   as CommonJS; the .d.ts files are copies of tsc's.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const out = join(dist, 'cjs');
const require = createRequire(join(root, 'package.json'));

/** Packages that publish ES modules only, inlined into the CommonJS build (with the licence each one requires). */
const VENDORED = { jose: 'LICENSE.md', oauth4webapi: 'LICENSE.md' };

/** The ES module build's files the CommonJS build mirrors: everything but the command line and itself. */
function esmFiles(dir, suffix) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === out || path === join(dist, 'cli') ? [] : esmFiles(path, suffix);
    return entry.name.endsWith(suffix) ? [path] : [];
  });
}

function packageJson(name) {
  return JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8'));
}

function packageDir(name) {
  let dir = dirname(require.resolve(name));
  while (
    !readdirSync(dir).includes('package.json') ||
    JSON.parse(readFileSync(join(dir, 'package.json'))).name !== name
  )
    dir = dirname(dir);
  return dir;
}

function relativeSpecifier(fromFile, toFile) {
  const path = relative(dirname(fromFile), toFile).split(sep).join('/');
  return path.startsWith('.') ? path : `./${path}`;
}

/** Keeps the module graph as it is: relative imports stay requires of sibling files, vendored ones point at vendor/. */
const externals = {
  name: 'externals',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('.')) return { path: args.path, external: true };
      if (Object.hasOwn(VENDORED, args.path)) {
        const importer = join(out, relative(dist, args.importer));
        return { path: relativeSpecifier(importer, join(out, 'vendor', `${args.path}.js`)), external: true };
      }
      return { path: args.path, external: true };
    });
  },
};

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20.19',
  // import() of an external becomes a require() wrapped in a promise.
  supported: { 'dynamic-import': false },
  sourcemap: true,
  sourcesContent: true,
  logLevel: 'warning',
};

rmSync(out, { recursive: true, force: true });

await build({
  ...common,
  entryPoints: esmFiles(dist, '.js'),
  outbase: dist,
  outdir: out,
  plugins: [externals],
  // Nest names classes in its messages ("can't resolve dependencies of BillingService"), and errors match by name.
  keepNames: true,
  define: { 'import.meta.url': 'importMetaUrl' },
  inject: [join(root, 'tools/cjs-import-meta-url.js')],
});

for (const [name, licence] of Object.entries(VENDORED)) {
  const { version, license } = packageJson(name);
  const vendored = join(out, 'vendor', `${name}.js`);
  await build({
    ...common,
    entryPoints: [require.resolve(name)],
    outfile: vendored,
    // Unminified, so readable as it is. A map would chain to the package's own, which names sources (oauth4webapi's
    // src/*.ts) that the package does not ship.
    sourcemap: false,
    banner: { js: `/*! ${name} ${version} | ${license} licence: ./${name}.${licence} */` },
  });
  copyFileSync(join(packageDir(name), licence), join(out, 'vendor', `${name}.${licence}`));
}

for (const declaration of esmFiles(dist, '.d.ts')) {
  const target = join(out, relative(dist, declaration));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(declaration, target);
}

writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
