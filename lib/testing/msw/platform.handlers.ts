import { delay, http, HttpResponse, type HttpHandler } from 'msw';
import { ConfigReport } from '../../options/config.report.js';
import { parseHttpUrl } from '../../options/url.rules.js';
import { PlatformAuthConfigError } from '../../platform-auth.errors.js';
import { answerFetch } from '../emulator/emulator.fetch.js';
import type { PlatformEmulator } from '../emulator/platform.emulator.js';

/**
 * The emulator the handlers answer for: the `PlatformEmulator` of `nestjs-platform-auth/testing` that
 * `PlatformEmulator.start()` resolved to. Only what this entry point shows of it is named here; any other value is
 * refused.
 */
export interface PlatformHandlersEmulator {
  /** The emulator's own URL, where its server listens; its inspector page and controls stay there. */
  readonly url: string;
  /** The `aud` its token endpoint expects. */
  readonly audience: string;
}

/** Where the handlers answer, and how they wait out a `delay` fault. */
export interface PlatformHandlersOptions {
  /**
   * The platform URL the app under test is configured with, its module's `baseUrl`: an origin, `https://…` or
   * `http:` on loopback, as the module requires (`https://platform.test`). Requests to any other origin pass these
   * handlers by.
   */
  readonly baseUrl: string;
  /**
   * How a `delay` fault waits before the request is answered: by default msw's `delay(ms)`. Pass your own to hold
   * such requests on a gate your test opens instead of on a timer. The emulator's `close()` ends the wait.
   */
  readonly delay?: (ms: number) => Promise<void>;
}

/**
 * MSW request handlers that answer requests to `baseUrl` as `emulator` answers them on its own URL: the same
 * integrations, token endpoint verdicts, access tokens, placeholder routes, one-shot faults, journal and counters,
 * because they run the emulator's own code. No port: the app points at `baseUrl` and MSW intercepts its calls.
 *
 * - A `drop` fault is a network error (`HttpResponse.error()`); `hang` waits until the request is aborted or the
 *   emulator closes, then is one too; `delay` waits as `options.delay` says.
 * - The emulator's `aud` is its `audience`: start it with `audience` set to `baseUrl`'s host
 *   (`PlatformEmulator.start({ audience: 'platform.test' })`), or give the module `audience: emulator.audience`.
 * - The inspector page and the controls stay on the emulator's own URL.
 *
 * ```ts
 * const server = setupServer(...createPlatformHandlers(emulator, { baseUrl: 'https://platform.test' }));
 * ```
 */
export function createPlatformHandlers(
  emulator: PlatformHandlersEmulator,
  options: PlatformHandlersOptions,
): HttpHandler[] {
  const report = new ConfigReport(undefined, {});
  // Not an instanceof check: the emulator may come from the package's other build (ES module or CommonJS).
  const { traffic } = (emulator ?? {}) as Partial<PlatformEmulator>;
  if (typeof traffic?.answer !== 'function')
    report.problem('emulator', 'is not a PlatformEmulator: pass the one PlatformEmulator.start() resolved to');
  const baseUrl = parseHttpUrl(options?.baseUrl, 'baseUrl', report, true);
  if (report.problems.length > 0 || baseUrl === undefined || traffic === undefined)
    throw new PlatformAuthConfigError(report.problems);
  const delayFault = options.delay ?? ((ms: number) => delay(ms));
  return [
    http.all(`${baseUrl.origin}/*`, async ({ request }) => {
      const response = await answerFetch(traffic, request, delayFault);
      return response.type === 'error' ? HttpResponse.error() : response;
    }),
  ];
}
