import { Injectable, Module, type InjectionToken, type Provider } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { PlatformAuthConfigError, type ConfigProblem } from './platform-auth.errors.js';
import { DECLARED_VARIABLES } from './platform-auth.constants.js';

type NestModule = NonNullable<ReturnType<ModulesContainer['get']>>;
type Wrapper = NonNullable<ReturnType<NestModule['providers']['get']>>;

/** Marks a module that reports its configuration (see `StartupProblems`); its value names the module in the error. */
export const CONFIGURATION_REPORTER = Symbol('nestjs-platform-auth configuration reporter');

/** What a module hands `StartupProblems.settle`: the value of its reporter provider. */
export interface Reporter {
  readonly label: string;
}

/**
 * The provider by which a module reports its configuration. Its factory depends on the module's options, so the
 * dependencies of its options (a `forRootAsync` factory's) are the ones `StartupProblems` finds from it.
 */
export function reporterProvider(label: string, optionsToken: InjectionToken): Provider {
  return { provide: CONFIGURATION_REPORTER, useFactory: (): Reporter => ({ label }), inject: [optionsToken] };
}

/**
 * Every configuration problem of every module of one application (machine integrations and user sign-in), in one
 * error. Nest builds the modules in parallel and reports only the first failure, so a module whose configuration
 * failed waits until the application's other modules have settled theirs, then throws all their problems together.
 * One instance per application (see `PlatformAuthStartupModule`): two applications in one process share nothing.
 *
 * A module never waits for one whose options are built from a platform-auth module's services (a `forRootAsync`
 * factory injecting `TokenProvider`, say): that one can settle only after the failed module has thrown.
 */
@Injectable()
export class StartupProblems {
  private readonly settled = new Map<NestModule, readonly ConfigProblem[]>();
  private readonly waiting = new Set<() => void>();

  constructor(private readonly modules: ModulesContainer) {}

  /**
   * Records how `reporter`'s configuration ended. Without a `PlatformAuthConfigError`, returns at once; with one,
   * waits for the others and throws the problems of all of them.
   */
  async settle(reporter: Reporter, error?: unknown): Promise<void> {
    const own = [...this.modules.values()].find(
      (module) => module.providers.get(CONFIGURATION_REPORTER)?.instance === reporter,
    );
    // Always found: the reporting module injected its reporter, so Nest resolved it there.
    if (!own) return;
    const problems = error instanceof PlatformAuthConfigError ? error.problems : [];
    this.settled.set(
      own,
      problems.map((problem) => ({ ...problem, setting: `${reporter.label}: ${problem.setting}` })),
    );
    for (const wake of [...this.waiting]) wake();
    if (problems.length === 0) return;
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        if (!this.awaited(own).every((module) => this.settled.has(module))) return;
        this.waiting.delete(wake);
        resolve();
      };
      this.waiting.add(wake);
      wake();
    });
    // In the order Nest registered the modules, whichever failed first.
    const failed = [...this.modules.values()].flatMap((module) => this.settled.get(module) ?? []);
    if (failed.length === problems.length) throw error;
    throw new PlatformAuthConfigError(failed);
  }

  /**
   * The environment a module's typo check reads: `env` without the variables that other modules of the application
   * declare they read (`PlatformAuthModule.readsVariables`), so a part built on this package keeps variables of its
   * own without a warning that no part reads them.
   */
  environment(env: Readonly<Record<string, string | undefined>> = process.env): Record<string, string | undefined> {
    const declared = new Set<string>();
    for (const module of this.modules.values()) {
      const names: unknown = module.providers.get(DECLARED_VARIABLES)?.instance;
      if (Array.isArray(names)) for (const name of names) declared.add(String(name));
    }
    return Object.fromEntries(Object.entries(env).filter(([name]) => !declared.has(name)));
  }

  /** The reporting modules `own` waits for: all but itself and those whose options depend on a reporting module. */
  private awaited(own: NestModule): NestModule[] {
    const reporting = [...this.modules.values()].filter((module) => module.providers.has(CONFIGURATION_REPORTER));
    return reporting.filter((module) => module !== own && !dependsOnAny(module, reporting));
  }
}

/** One per application, imported by every module that reports, so they share one `StartupProblems`. */
@Module({ providers: [StartupProblems], exports: [StartupProblems] })
export class PlatformAuthStartupModule {}

/** Whether `module`'s reporter (its options, and what they are built from) depends on a provider of `reporting`. */
function dependsOnAny(module: NestModule, reporting: readonly NestModule[]): boolean {
  const seen = new Set<Wrapper>();
  const pending: [NestModule, InjectionToken][] = [[module, CONFIGURATION_REPORTER]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const found = lookup(next[0], next[1]);
    if (!found || seen.has(found.wrapper)) continue;
    seen.add(found.wrapper);
    if (found.host !== module && reporting.includes(found.host)) return true;
    for (const token of dependencies(found.wrapper)) pending.push([found.host, token]);
  }
  return false;
}

/** Where Nest finds `token` for a provider of `module`: the module itself, else an import exporting it. */
function lookup(module: NestModule, token: InjectionToken): { wrapper: Wrapper; host: NestModule } | undefined {
  const wrapper = module.providers.get(token);
  if (wrapper) return { wrapper, host: module };
  const seen = new Set<NestModule>();
  // As Nest looks: each import exporting the token, and through the modules an import re-exports.
  const visit = (imports: Iterable<NestModule>): { wrapper: Wrapper; host: NestModule } | undefined => {
    for (const imported of imports) {
      if (!imported || seen.has(imported)) continue;
      seen.add(imported);
      const provided = imported.providers.get(token);
      if (provided && imported.exports.has(token)) return { wrapper: provided, host: imported };
      const found = visit([...imported.imports].filter((inner) => imported.exports.has(inner?.metatype)));
      if (found) return found;
    }
    return undefined;
  };
  return visit(module.imports);
}

/** The tokens a provider is built from: a factory's `inject`, else its class's constructor and property injections. */
function dependencies(wrapper: Wrapper): InjectionToken[] {
  const tokens: unknown[] = [];
  if (wrapper.inject) tokens.push(...wrapper.inject);
  else if (typeof wrapper.metatype === 'function') {
    const types = [...((Reflect.getMetadata('design:paramtypes', wrapper.metatype) as unknown[] | undefined) ?? [])];
    const own = (Reflect.getMetadata('self:paramtypes', wrapper.metatype) ?? []) as { index: number; param: unknown }[];
    for (const { index, param } of own) types[index] = param;
    const properties = (Reflect.getMetadata('self:properties_metadata', wrapper.metatype) ?? []) as { type: unknown }[];
    tokens.push(...types, ...properties.map((property) => property.type));
  }
  return tokens.flatMap((token) => {
    const unwrapped = typeof token === 'object' && token !== null && 'token' in token ? token.token : token;
    if (typeof unwrapped === 'object' && unwrapped !== null && 'forwardRef' in unwrapped)
      return [(unwrapped.forwardRef as () => InjectionToken)()];
    return unwrapped === undefined ? [] : [unwrapped as InjectionToken];
  });
}
