import { executionAsyncId } from 'node:async_hooks';
import { afterAll } from 'vitest';

/**
 * A setup file of the shared project, whose test files run one after another in the same process: a file that leaves
 * an `AsyncLocalStorage` enabled (one whose `run` or `enterWith` was called and that was never disabled) leaves Node's
 * promise hooks on for the rest of the process, and every promise of every later file in that worker then costs
 * several times as much (measured: 100,000 awaits took 22 ms before such a file and 70-157 ms after it). Fails the
 * file that does so. The fix is to disable the storage in the file's `afterAll`, or, where a package keeps it out of
 * reach (Playwright's), to give the file a process of its own (`ISOLATED_FILES` in vitest.config.ts).
 */
async function promiseHooksOn(): Promise<boolean> {
  // With the hooks off, promises get no async ids of their own: both reads see the resource the awaits run in.
  await Promise.resolve();
  const first = executionAsyncId();
  await Promise.resolve();
  return executionAsyncId() !== first;
}

const onBefore = await promiseHooksOn();

afterAll(async () => {
  if (onBefore || !(await promiseHooksOn())) return;
  throw new Error(
    'This file left an AsyncLocalStorage enabled, which keeps promise hooks on and slows every later file of this ' +
      'worker: disable it in afterAll, or list the file in ISOLATED_FILES (vitest.config.ts).',
  );
});
