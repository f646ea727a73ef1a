import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository root. Its dist/ and sample-app/dist/ are built once per test run, by the global set-up
 * (build-once.global-setup.ts) before any test file starts, and nothing in the run rebuilds them: a test that runs the
 * package in another process (by `import('nestjs-platform-auth')` from here, the bin, the sample app) can rely on it.
 */
export const packageRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The bin as `npm install` links it: `platform-auth` runs this file. */
export const builtCliPath = join(packageRoot, 'dist/cli/main.js');

/**
 * Set by the global set-up: a directory of this test run, removed after it, where the packaging files' one pack is made.
 * Not a `PLATFORM_*` name: the package warns at start-up about those it does not read. */
export const SHARED_PACK_VARIABLE = 'NESTJS_PLATFORM_AUTH_TEST_PACK_DIR';
