import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { packageRoot } from '../support/built-package.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./fixtures/waiting-script.mjs', import.meta.url));

let emulator: PlatformEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

/**
 * The real clock's waits hold the process open while a call waits on them: a script (a cron job, a one-off task)
 * whose call is told to come back in a second must make that call, not end with it lost. The emulator runs in this
 * process; the script in its own, with nothing else to keep it alive. The one real second here is the point.
 */
describe('a call that waits to be re-sent keeps its process running', () => {
  it.each(['fetch', 'http'])('through %s', async (client) => {
    emulator = await PlatformEmulator.start();
    const integration = await emulator.createIntegration({ name: 'script' });
    emulator.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '1' } }, 'api');
    const { stdout } = await run(process.execPath, [SCRIPT, client], {
      cwd: packageRoot,
      env: { ...process.env, PLATFORM_TEST_MODULE_OPTIONS: JSON.stringify(integration.moduleOptions) },
    });
    expect(stdout.trim()).toBe('status 200');
    expect(emulator.counters.apiCalls).toMatchObject({ total: 2, faulted: 1, ok: 1 });
  });
});
