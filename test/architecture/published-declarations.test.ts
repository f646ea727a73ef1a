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

  it('name every type an app writes, the parts of options and status included, and keep a Redis client opaque', async () => {
    const errors = await compileAgainstDeclarations(
      [
        'import type {',
        '  AccessToken, AssertionSigningError, CallRetryOptions, ConfigProblem, ExchangeOptions, IdempotencyKeyOptions,',
        '  KeySource, PlatformAuthDiagnosticsEvent, PlatformAuthModule, PlatformTenantsOptions, PlatformTenantsStatus,',
        '  RateLimitOptions, RedisConnectionOptions, TokenExchangeError, TokenProviderStatus, TokenStoreOptions,',
        "} from 'nestjs-platform-auth';",
        "export const key: KeySource = { privateKeyPath: '/k.pem', certificatePath: '/c.pem' };",
        "export const store: TokenStoreOptions = { sentinel: { masterName: 'main', nodes: ['s:26379'] }, tls: { caPath: '/ca.pem' } };",
        'export const exchange: ExchangeOptions = { retry: { maxAttempts: 1 } };',
        'export const retry: CallRetryOptions = { maxAttempts: 2 };',
        "export const idempotencyKey: IdempotencyKeyOptions = { methods: ['POST'] };",
        'export const rateLimit: RateLimitOptions = { requestsPerSecond: 5 };',
        'type ForRoot = Parameters<typeof PlatformAuthModule.forRoot>[0];',
        "export const extras: Pick<ForRoot, 'name' | 'isGlobal'> = { name: 'billing', isGlobal: true };",
        "export const telemetry: PlatformTenantsOptions['telemetry'] = { tenantIdInSpans: true };",
        "export const state: TokenProviderStatus['state'] = 'valid';",
        "export type Limit = NonNullable<TokenProviderStatus['rateLimit']>['mode'];",
        "export type ByState = PlatformTenantsStatus['byState'];",
        "export type Expiry = AccessToken['expiresAt'];",
        "export const reason: TokenExchangeError['reason'] = 'timeout';",
        "export const problem: ConfigProblem['setting'] = 'machineId';",
        "export const fault: AssertionSigningError['fault'] = 'pss';",
        "export const retried: Extract<PlatformAuthDiagnosticsEvent, { event: 'call:retry' }>['reason'] = 'unavailable';",
        'export const client: RedisConnectionOptions = { client: { sendCommand: () => Promise.resolve() } };',
        "export const url: RedisConnectionOptions = { client: 'redis://redis:6379' };",
        '',
      ].join('\n'),
    );
    // One error, on the last line: a client is any object, which a URL is not; everything else type-checks.
    expect(errors).toEqual([
      expect.stringMatching(/^app\.ts\(24,\d+\): error TS2322: Type 'string' is not assignable to type 'object'/),
    ]);
  }, 60_000);
});
