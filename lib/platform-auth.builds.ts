import type { Abstract, DynamicModule, Provider } from '@nestjs/common';
import { fileURLToPath } from 'node:url';

/*
 * The package ships one code base twice: ES modules in dist/ and CommonJS in dist/cjs/. A process can load both (an
 * app imports the package, a CommonJS library it uses require()s it), and then every class exists twice. Nest injects
 * by class, so a service provided under one build's `TokenProvider` would not be found under the other build's. Each
 * build registers its injectable classes here, and a module also provides its services under the classes of the
 * other build of the same installed package. State is shared through `globalThis`, keyed by the installed package,
 * so two builds of one install meet and two installs (two versions, say) stay apart, as any two packages do.
 */

type ServiceClass = Abstract<unknown>;
type ServiceClasses = Readonly<Record<string, ServiceClass>>;
/** Per group (`'platform-auth'`, `'user'`): the classes each build registered, by build. */
type Registry = Map<string, Map<symbol, ServiceClasses>>;

/** This build: the identity its classes are registered under. */
const THIS_BUILD = Symbol('nestjs-platform-auth build');

/**
 * The installed package, the same for both of its builds: dist/cjs/ mirrors dist/ file for file, so this file's path
 * without the `cjs` folder names the install. An app bundler may leave no file URL (esbuild turns `import.meta` into
 * `{}` in CommonJS output); the bundle then holds one copy, under one name.
 */
function installOf(url: string | undefined): string {
  if (!url?.startsWith('file:')) return 'bundled';
  return fileURLToPath(url)
    .replace(/([\\/])cjs[\\/]([^\\/]+)$/, '$1$2')
    .replace(/\.[cm]?[jt]s$/, '');
}
const INSTALL = installOf(import.meta.url);

/** One object per installed package and `name`, shared by the package's builds in this process. */
export function sharedAcrossBuilds<T extends object>(name: string, create: () => T): T {
  const key = Symbol.for(`nestjs-platform-auth:${INSTALL}:${name}`);
  const holder = globalThis as unknown as Record<symbol, T | undefined>;
  return (holder[key] ??= create());
}

const registry = sharedAcrossBuilds<Registry>('classes', () => new Map());

/** Records the injectable classes of `group` in this build, for the other build's modules to provide aliases. */
export function registerBuildClasses(group: string, classes: ServiceClasses): void {
  let builds = registry.get(group);
  if (!builds) registry.set(group, (builds = new Map<symbol, ServiceClasses>()));
  builds.set(THIS_BUILD, classes);
}

function otherBuildAliases(
  group: string,
  classes: ServiceClasses,
): { provide: ServiceClass; useExisting: ServiceClass }[] {
  const aliases: { provide: ServiceClass; useExisting: ServiceClass }[] = [];
  for (const [build, theirs] of registry.get(group) ?? []) {
    if (build === THIS_BUILD) continue;
    for (const [name, own] of Object.entries(classes)) {
      if (theirs[name] && theirs[name] !== own) aliases.push({ provide: theirs[name], useExisting: own });
    }
  }
  return aliases;
}

/**
 * `definition`, also providing and exporting its services (`classes`) under the other build's classes. Read when Nest
 * scans the module, not when `forRoot` runs, so it holds whichever build was loaded first.
 */
export function withOtherBuildAliases(
  definition: DynamicModule,
  group: string,
  classes: ServiceClasses,
): DynamicModule {
  const { providers = [], exports = [] } = definition;
  return Object.defineProperties(
    { ...definition },
    {
      providers: {
        enumerable: true,
        get: (): Provider[] => [...providers, ...otherBuildAliases(group, classes)],
      },
      exports: {
        enumerable: true,
        get: (): NonNullable<DynamicModule['exports']> => [
          ...exports,
          ...otherBuildAliases(group, classes).map((alias) => alias.provide),
        ],
      },
    },
  );
}
