import { isLoopbackHost } from '../util/loopback.util.js';
import { quotable, type ConfigReport } from './config.report.js';
import { DEFAULT_TOKEN_PATH } from './options.constants.js';

/**
 * The one base URL rule, worded once for start-up, the CLI and the docs: the base URL is the platform's origin, and
 * the token endpoint lies at `tokenPath` below it. A path would be silently dropped by some clients and kept by
 * others, and the exchange would fail only at the first request with a 404.
 */
export function baseUrlPathProblem(url: URL): string {
  return `has the path '${url.pathname}'; remove the path: the base URL is https://{platform_domain} only, and the token endpoint is found at tokenPath below it (${url.origin}${DEFAULT_TOKEN_PATH})`;
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
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    report.problem(option, `uses ${url.protocol}; only https: is accepted`);
    return undefined;
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    report.problem(
      option,
      `'${url.origin}' uses http: off loopback; the token and assertion would travel in clear text, use https:`,
    );
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
