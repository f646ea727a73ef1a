import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { isLoopbackHost } from '../../util/loopback.util.js';

/** Headers of one connection, never of the message a proxy passes on (RFC 9110 section 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
/**
 * Besides hop-by-hop headers, what the proxy never passes on to the platform: `Host` (the platform's own is sent),
 * `Authorization` (the integration's token is), the length and encodings fetch sets and decodes itself, and
 * `Expect`, which Node's server has answered already.
 */
const NOT_FORWARDED = new Set(['host', 'authorization', 'content-length', 'accept-encoding', 'expect']);
/** The platform's body arrives decoded by fetch, so its length and encoding headers no longer describe it. */
const NOT_RETURNED = new Set(['content-length', 'content-encoding']);
/** TRACE echoes the request, the token included, back to the caller; CONNECT would open a tunnel anywhere. */
export const REFUSED_METHODS = new Set(['TRACE', 'TRACK', 'CONNECT']);

/** Where the proxy listens: the `Host` values it answers to are derived from it. */
interface ProxyBinding {
  readonly host: string;
  readonly port: number;
}

/**
 * Why the request target is refused, if it is. Only the origin form (`/path?query`) is forwarded, onto the
 * platform's origin and nowhere else: an absolute URL (`http://evil/…`), an authority (`evil:443`) or a path that a
 * URL parser reads as another host (`//evil/…`, `/\evil/…`) is refused, and so is anything that would not resolve
 * to the platform's origin.
 */
export function targetProblem(target: string | undefined, platformOrigin: string): string | undefined {
  if (target === undefined || !target.startsWith('/'))
    return 'only a path is forwarded (GET /api/billing), never an absolute URL or another host';
  if (/^\/[/\\]/.test(target)) return "a path that starts with '//' or '/\\' names another host to a URL parser";
  let resolved: URL;
  try {
    resolved = new URL(platformOrigin + target);
  } catch {
    return 'the path is not a valid URL path';
  }
  return resolved.origin === platformOrigin ? undefined : 'the path does not stay on the platform origin';
}

/**
 * Whether `Host` names this proxy. Bound to loopback, only loopback names are accepted: a page that makes a browser
 * resolve its own name to 127.0.0.1 (DNS rebinding) sends its own name and is refused. Bound to another address
 * (`--host`), that name and IP literals are accepted too, never another DNS name.
 */
export function isAcceptedHost(host: string | undefined, binding: ProxyBinding): boolean {
  if (host === undefined || host === '' || /[/?#@\\\s]/.test(host)) return false;
  let parsed: URL;
  try {
    parsed = new URL(`http://${host}`);
  } catch {
    return false;
  }
  if (Number(parsed.port || '80') !== binding.port) return false;
  const name = parsed.hostname.toLowerCase();
  if (isLoopbackHost(name)) return true;
  if (isLoopbackHost(binding.host)) return false;
  const bare = name.replace(/^\[|\]$/g, '');
  return isIP(bare) !== 0 || bare === binding.host.toLowerCase().replace(/^\[|\]$/g, '');
}

/** A browser sends these on every cross-site request it makes; curl, SDKs and servers never do. */
export function isFromBrowser(headers: IncomingHttpHeaders): boolean {
  return headers.origin !== undefined || headers['sec-fetch-site'] !== undefined;
}

/** The client's headers, as the platform should get them: duplicates kept, hop-by-hop and the token's dropped. */
export function forwardedRequestHeaders(rawHeaders: readonly string[]): Headers {
  const connectionTokens = listedInConnection(rawHeaders);
  const headers = new Headers();
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = rawHeaders[index].toLowerCase();
    if (HOP_BY_HOP.has(name) || NOT_FORWARDED.has(name) || connectionTokens.has(name)) continue;
    headers.append(name, rawHeaders[index + 1]);
  }
  return headers;
}

/**
 * The platform's headers, as the client should get them. A redirect to the platform's own origin is made relative,
 * so that the client follows it through the proxy rather than to the platform without a token.
 */
export function returnedResponseHeaders(response: Response, platformOrigin: string): Record<string, string | string[]> {
  const connectionTokens = new Set(
    (response.headers.get('connection') ?? '').split(',').map((token) => token.trim().toLowerCase()),
  );
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (HOP_BY_HOP.has(name) || NOT_RETURNED.has(name) || connectionTokens.has(name) || name === 'set-cookie') return;
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  const location = headers.location;
  if (typeof location === 'string') {
    try {
      const target = new URL(location, platformOrigin);
      if (target.origin === platformOrigin) headers.location = target.pathname + target.search + target.hash;
    } catch {
      // Not a URL: the client gets it as the platform sent it.
    }
  }
  return headers;
}

function listedInConnection(rawHeaders: readonly string[]): Set<string> {
  const tokens = new Set<string>();
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if (rawHeaders[index].toLowerCase() !== 'connection') continue;
    for (const token of rawHeaders[index + 1].split(',')) tokens.add(token.trim().toLowerCase());
  }
  return tokens;
}
