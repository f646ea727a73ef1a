import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isLoopbackHost } from '../../util/loopback.util.js';

/**
 * The header that carries the proxy's key. A page can make a browser send a header of its own only after a CORS
 * preflight, which the proxy never grants.
 */
export const PROXY_KEY_HEADER = 'x-platform-proxy-key';

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
 * `Authorization` (the integration's token is), the proxy's key, the length and encodings fetch sets and decodes
 * itself, and `Expect`, which Node's server has answered already.
 */
const NOT_FORWARDED = new Set([
  'host',
  'authorization',
  PROXY_KEY_HEADER,
  'content-length',
  'accept-encoding',
  'expect',
]);
/** The platform's body arrives decoded by fetch, so its length and encoding headers no longer describe it. */
const NOT_RETURNED = new Set(['content-length', 'content-encoding']);
/**
 * TRACE echoes the request, the token included, back to the caller; CONNECT would open a tunnel anywhere; OPTIONS is
 * what a browser's CORS preflight asks, and the proxy grants a page nothing.
 */
export const REFUSED_METHODS = new Set(['TRACE', 'TRACK', 'CONNECT', 'OPTIONS']);

/** The platform URL a request target is forwarded to, or why it is refused. */
type ResolvedTarget = { readonly url: string; readonly problem?: undefined } | { readonly problem: string };

/**
 * The platform URL a request target names, dot segments resolved. Only the origin form (`/path?query`) is forwarded,
 * onto the platform's origin and nowhere else: an absolute URL (`http://evil/…`), an authority (`evil:443`) or a path
 * that a URL parser reads as another host (`//evil/…`, `/\\evil/…`, and `/..//evil/…` once its dot segments are
 * resolved, which a client following a redirect to it would read as `//evil/…`) is refused.
 */
export function resolveTarget(target: string | undefined, platformOrigin: string): ResolvedTarget {
  if (target === undefined || !target.startsWith('/'))
    return { problem: 'only a path is forwarded (GET /api/billing), never an absolute URL or another host' };
  const namesAHost = "a path that starts with '//' or '/\\' names another host to a URL parser";
  if (/^\/[/\\]/.test(target)) return { problem: namesAHost };
  let resolved: URL;
  try {
    resolved = new URL(platformOrigin + target);
  } catch {
    return { problem: 'the path is not a valid URL path' };
  }
  if (resolved.origin !== platformOrigin) return { problem: 'the path does not stay on the platform origin' };
  if (/^\/[/\\]/.test(resolved.pathname)) return { problem: `${namesAHost}, once its dot segments are resolved` };
  return { url: resolved.href };
}

/** Where the proxy listens: the `Host` values it answers to are derived from it. */
interface ProxyBinding {
  readonly host: string;
  readonly port: number;
  /** This machine's addresses, for a proxy bound to all of them (`0.0.0.0`, `::`); read when asked. */
  readonly localAddresses?: () => Iterable<string>;
}

/**
 * Whether `Host` names this proxy, so that the proxy's own URLs (a rewritten `Location`) can be built on it. Loopback
 * names are accepted everywhere: a page that makes a browser resolve its own name to 127.0.0.1 (DNS rebinding) sends
 * its own name and is refused. Bound to another address (`--host`), that address or name is accepted too, and bound
 * to all addresses (`0.0.0.0`, `::`), an IP literal of one of this machine's addresses; never another DNS name or
 * another machine's address.
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
  if (isLoopbackHost(parsed.hostname)) return true;
  const name = bare(parsed.hostname);
  const bound = bare(binding.host);
  if (isLoopbackHost(bound)) return false;
  if (name === bound) return true;
  if (isIP(name) === 0 || (bound !== '0.0.0.0' && bound !== '::')) return false;
  const own = binding.localAddresses?.() ?? ownAddresses();
  for (const address of own) if (bare(address) === name) return true;
  return false;
}

/** A name or address as `URL` writes it: lower case, without brackets, IPv6 shortened. */
function bare(host: string): string {
  const unbracketed = host.toLowerCase().replace(/^\[|\]$/g, '');
  return isIP(unbracketed) === 6 ? new URL(`http://[${unbracketed}]`).hostname.replace(/^\[|\]$/g, '') : unbracketed;
}

function* ownAddresses(): Iterable<string> {
  for (const addresses of Object.values(networkInterfaces())) for (const { address } of addresses ?? []) yield address;
}

/**
 * What a browser sends with what a page makes it request (to loopback and https origins: `Sec-Fetch-*` are left out
 * of requests to a plain-http address on the network). curl, SDKs and servers send none of them, and Node's own
 * `fetch` only `Sec-Fetch-Mode: cors`, which is therefore not one of them.
 */
export function isFromBrowser(headers: IncomingHttpHeaders): boolean {
  return (
    headers.origin !== undefined ||
    headers['sec-fetch-site'] !== undefined ||
    headers['sec-fetch-dest'] !== undefined ||
    headers['sec-fetch-user'] !== undefined
  );
}

/** `key`'s digest, so that any given value is compared with it in constant time, whatever its length. */
export function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** Whether the request carries the proxy's key (its digest given), compared in constant time. */
export function carriesKey(headers: IncomingHttpHeaders, digest: Buffer): boolean {
  const given = headers[PROXY_KEY_HEADER];
  return typeof given === 'string' && timingSafeEqual(keyDigest(given), digest);
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
 * The platform's headers, as the client should get them. A redirect to the platform's own origin is made absolute on
 * the proxy's (`proxyOrigin`, the origin the client reached it at), so that the client follows it through the proxy
 * rather than to the platform without a token, and never reads it as another host (`//evil/…`). A relative
 * `Location` is resolved against the URL that was forwarded (`requestUrl`), as the client would have.
 */
export function returnedResponseHeaders(
  response: Response,
  platformOrigin: string,
  requestUrl: string,
  proxyOrigin: string,
): Record<string, string | string[]> {
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
      const target = new URL(location, requestUrl);
      if (target.origin === platformOrigin)
        headers.location = proxyOrigin + target.pathname + target.search + target.hash;
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
