import { afterAll } from 'vitest';

/**
 * A setup file of the shared project, whose test files run one after another in the same process: fails a file that
 * replaced `process.env` (`process.env = saved`) instead of restoring it in place (`restoreEnv` of environment.ts).
 * A plain object in its place no longer reaches native code, so a later file of the worker that sets a variable for
 * a native library (SoftHSM reads `SOFTHSM2_CONF` from the C environment at `C_Initialize`) would have it read the
 * variable as an earlier file left it. The worker gets its environment back either way.
 */
const REAL = Symbol.for('nestjs-platform-auth.test.real-environment');
const worker = globalThis as { [REAL]?: NodeJS.ProcessEnv };
// The first file of the worker records the environment Node made; the files after it are checked against it.
worker[REAL] ??= process.env;
const real = worker[REAL];

afterAll(() => {
  if (process.env === real) return;
  process.env = real;
  throw new Error(
    'This file replaced process.env, which cuts later files of this worker off from the environment native code ' +
      'reads: put it back in place with restoreEnv (test/support/environment.ts).',
  );
});
