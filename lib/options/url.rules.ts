import { isLoopbackHost } from '../util/loopback.util.js';
import { quotable, type ConfigReport } from './config.report.js';
import { DEFAULT_TOKEN_PATH } from './options.constants.js';

/**
 * The one base URL rule, worded once for start-up, the CLI and the docs: the base URL is the platform's origin, and
 * the token endpoint lies at `exchange.path` below it. A path would be silently dropped by some clients and kept by
 * others, and the exchange would fail only at the first request with a 404.
 */
function baseUrlPathProblem(url: URL): string {
  return `has the path '${url.pathname}'; remove the path: the base URL is https://{platform_domain} only, and the token endpoint is found at exchange.path below it (${url.origin}${DEFAULT_TOKEN_PATH})`;
}

/**
 * The one transport rule for every URL the library calls or sends a browser to: `https:`, or `http:` to a loopback
 * host (a local emulator or test server), where nothing crosses a network. `undefined` when `url` keeps it, else
 * the problem, worded to follow the URL's name.
 */
function transportProblem(url: URL): string | undefined {
  if (url.protocol === 'https:') return undefined;
  if (url.protocol !== 'http:') return `uses ${url.protocol}; only https: is accepted`;
  if (isLoopbackHost(url.hostname)) return undefined;
  return `'${url.origin}' uses http: off loopback; tokens and assertions would travel in clear text, use https:`;
}

/** `value` as an absolute URL that keeps the transport rule; else the problem (never quoting a long or odd value). */
export function httpUrlProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'is not an absolute URL';
  try {
    return transportProblem(new URL(value));
  } catch {
    return 'is not an absolute URL';
  }
}

/**
 * An `http:`/`https:` URL checked into `report`: absolute, no userinfo, `http:` only on loopback. `isBase`: the
 * platform's base URL, which must also be an origin only (no path, query or fragment). `undefined` after a problem.
 */
export function parseHttpUrl(value: unknown, option: string, report: ConfigReport, isBase: boolean): URL | undefined {
  if (typeof value !== 'string' || value.trim() === '') {
    report.problem(option, isBase ? 'is required (https://{platform_domain})' : 'contains an empty entry');
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    const shown = quotable(value);
    report.problem(option, shown === undefined ? 'is not an absolute URL' : `'${shown}' is not an absolute URL`);
    return undefined;
  }
  if (url.username || url.password) {
    report.problem(option, 'must not contain credentials (user:password@)');
    return undefined;
  }
  const transport = transportProblem(url);
  if (transport !== undefined) {
    report.problem(option, transport);
    return undefined;
  }
  if (isBase && (url.search || url.hash)) {
    report.problem(option, 'must not contain a query or fragment');
    return undefined;
  }
  if (isBase && url.pathname !== '/') {
    report.problem(option, baseUrlPathProblem(url));
    return undefined;
  }
  return url;
}
