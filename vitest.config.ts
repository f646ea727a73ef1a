import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first.sequencer.js';

const sourceOf = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * Files that need a process of their own:
 * - OpenTelemetry's HTTP instrumentation patches `node:http` when it is registered, which it cannot do once another
 *   file of the same worker has loaded it;
 * - Playwright enables an AsyncLocalStorage of its own, out of reach, when it starts a browser, which would leave
 *   promise hooks on for the files after it (test/support/async-hooks.guard.ts).
 * The SoftHSM files share workers: the library is finalised when a file's last key closes, and the next file's
 * `C_Initialize` reads that file's `SOFTHSM2_CONF`, as long as no file before it replaced `process.env` with a plain
 * object (test/support/environment.guard.ts).
 */
const ISOLATED_FILES = ['test/operations/telemetry-tracing.test.ts', 'test/emulator/inspector.browser.test.ts'];

/**
 * The files that take minutes: the quick soak runs a fleet through its fault schedule in real time, and the
 * packaging files pack the package and install it into apps. `npm run test:fast` leaves them out (their project is
 * `slow`); `npm test` and `.ci/run` run them.
 */
const SLOW_FILES = ['test/packaging/**/*.test.ts', 'test/rotation/soak-quick.test.ts'];

const selfSignedCredentials = sourceOf('./lib/testing/self-signed-credentials.util.ts');
const pooledTestKeys = sourceOf('./test/support/pooled-test-keys.ts');

/**
 * The emulator and `createTestCredentials` get their keys from test/support/pooled-test-keys.ts, which reuses keys
 * across runs: one costs 60–150 ms of CPU, and the suite emulates hundreds of integrations. The command line's
 * `keygen` imports the module from lib/cli and keeps its generation, which its tests cover.
 */
const pooledTestKeysPlugin = {
  name: 'pooled-test-keys',
  enforce: 'pre' as const,
  resolveId(source: string, importer: string | undefined): string | undefined {
    if (!importer?.startsWith(sourceOf('./lib/testing/')) || !source.startsWith('.')) return undefined;
    return join(dirname(importer), source.replace(/\.js$/, '.ts')) === selfSignedCredentials
      ? pooledTestKeys
      : undefined;
  },
};

/** What every test project compiles and resolves alike. */
const build = {
  plugins: [pooledTestKeysPlugin],
  // Nest's dependency injection reads constructor parameter types from decorator metadata.
  oxc: {
    decorator: { legacy: true, emitDecoratorMetadata: true },
  },
  resolve: {
    alias: [
      { find: /^nestjs-platform-auth\/terminus$/, replacement: sourceOf('./lib/terminus/index.ts') },
      { find: /^nestjs-platform-auth\/outbox$/, replacement: sourceOf('./lib/outbox/index.ts') },
      { find: /^nestjs-platform-auth\/testing$/, replacement: sourceOf('./lib/testing/index.ts') },
      { find: /^nestjs-platform-auth\/testing\/msw$/, replacement: sourceOf('./lib/testing/msw/index.ts') },
      { find: /^nestjs-platform-auth\/user$/, replacement: sourceOf('./lib/user/index.ts') },
      { find: /^nestjs-platform-auth$/, replacement: sourceOf('./lib/index.ts') },
    ],
  },
} satisfies TestProjectInlineConfiguration;

const testOptions = {
  setupFiles: ['reflect-metadata'],
  pool: 'forks',
  // Hang guards only: tests wait for conditions, never for a time, so a slow machine takes longer but passes.
  testTimeout: 300_000,
  hookTimeout: 300_000,
  // `expect.poll` waits for a condition; its default of 1 s is a race on a busy machine, not a bound on correctness.
  expect: { poll: { timeout: 120_000 } },
} satisfies TestProjectInlineConfiguration['test'];

export default defineConfig({
  ...build,
  test: {
    // dist/ and the sample app, built once before any test file; tests that run them in other processes rely on it.
    // Here only, not in the projects, which would each run it again.
    globalSetup: ['test/support/build-once.global-setup.ts'],
    // More workers than this machine's 2 cores: most test files spend their time waiting on servers and processes.
    maxWorkers: 4,
    sequence: { sequencer: SlowFirstSequencer },
    // Transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache): a run after the first
    // spends about 30 s less CPU. The global set-up writes its errors' stacks out itself (test/support/plain-stack.ts),
    // which Vitest 4.1 would otherwise report as its own "code.charCodeAt is not a function".
    experimental: { fsModuleCache: true },
    projects: [
      {
        ...build,
        test: {
          ...testOptions,
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', ...ISOLATED_FILES, ...SLOW_FILES],
          setupFiles: [
            ...testOptions.setupFiles,
            'test/support/async-hooks.guard.ts',
            'test/support/environment.guard.ts',
          ],
          // The files of a worker share one module graph: loading Nest, axios and the library once per worker
          // instead of once per file halves the suite's CPU time. They leave no state behind (environment variables
          // are restored, spies undone, servers closed).
          isolate: false,
        },
      },
      {
        ...build,
        test: {
          ...testOptions,
          name: 'slow',
          include: SLOW_FILES,
        },
      },
      {
        ...build,
        test: {
          ...testOptions,
          name: 'isolated',
          // The sample app decides at import, from the environment each file sets, which modules it registers.
          include: ['test/e2e/**/*.test.ts', ...ISOLATED_FILES],
        },
      },
    ],
  },
});
