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
        "import type { PlatformFetch } from 'nestjs-platform-auth';",
        "export const dispatcherOf = (platformFetch: PlatformFetch): PlatformFetch['dispatcher'] =>",
        '  platformFetch.dispatcher;',
        '',
      ].join('\n'),
      { lib: undefined, skipLibCheck: false },
    );
    // Other packages' declarations are theirs to keep (skipLibCheck is off for every package): ours and the app's.
    const ours = (line: string) =>
      line.startsWith('app.ts') || (line.includes('dist/') && !line.includes('node_modules'));
    expect(errors.filter(ours)).toEqual([]);
  }, 60_000);

  it('name no type an app meets only inside another, and reach each through the type that holds it', async () => {
    const errors = await compileAgainstDeclarations(
      [
        "import type { TokenStoreOptions } from 'nestjs-platform-auth';",
        'import type {',
        '  AssertionSigningError, AssertionSigner, PlatformAuthConfigError, PlatformAuthDiagnosticsEvent,',
        '  PlatformAuthModule, PlatformAuthOptions, PlatformFetch, PlatformTenants, PlatformTenantsOptions,',
        '  TokenExchangeError, TokenProvider,',
        "} from 'nestjs-platform-auth';",
        'type ObjectOf<T> = Exclude<T, boolean | undefined>;',
        "export type Store = Exclude<ObjectOf<PlatformAuthOptions['tokenStore']>, { get: unknown }>;",
        "export const sentinel: NonNullable<Store['sentinel']> = { masterName: 'main', nodes: ['redis://s:26379'] };",
        "export const store: Store = { url: 'rediss://redis:6380', sentinel, tls: { caPath: '/ca.pem' } };",
        "export const key: NonNullable<PlatformAuthOptions['key']> = { privateKeyPath: '/k.pem' };",
        "export const retry: ObjectOf<PlatformAuthOptions['retry']> = { maxAttempts: 2 };",
        "export const exchange: NonNullable<PlatformAuthOptions['exchange']> = { retry: { maxAttempts: 1 } };",
        'type ForRoot = Parameters<typeof PlatformAuthModule.forRoot>[0];',
        "export const extras: Pick<ForRoot, 'name' | 'isGlobal'> = { name: 'billing', isGlobal: true };",
        "export const telemetry: PlatformTenantsOptions['telemetry'] = undefined;",
        "export type State = ReturnType<TokenProvider['status']>['state'];",
        "export type Limit = NonNullable<ReturnType<TokenProvider['status']>['rateLimit']>['mode'];",
        "export type Tenants = ReturnType<PlatformTenants['status']>;",
        "export type Token = Awaited<ReturnType<TokenProvider['getToken']>>['expiresAt'];",
        "export type Rotation = Parameters<TokenProvider['rotateCredentials']>[0]['key']['certificate'];",
        "export type Assertion = Parameters<AssertionSigner['createAssertion']>[0];",
        "export type Init = Parameters<PlatformFetch['fetch']>[1];",
        "export type Interceptor = PlatformFetch['interceptor'];",
        "export const reason: TokenExchangeError['reason'] = 'timeout';",
        "export const problem: PlatformAuthConfigError['problems'][number]['setting'] = 'machineId';",
        "export const fault: AssertionSigningError['fault'] = 'pss';",
        "export const retried: Extract<PlatformAuthDiagnosticsEvent, { event: 'call:retry' }>['reason'] = 'unavailable';",
        '',
      ].join('\n'),
    );
    // One error, on the first line: the entry point does not name the options' parts; everything else type-checks.
    expect(errors).toEqual([
      expect.stringMatching(
        /^app\.ts\(1,\d+\): error TS2305: Module '"nestjs-platform-auth"' has no exported member 'TokenStoreOptions'/,
      ),
    ]);
  }, 60_000);
});
