import type { InternalAxiosRequestConfig } from 'axios';

const ABSOLUTE_URL = /^([a-z][a-z\d+\-.]*:)?\/\//i;

/** `url` as text: a string, or a WHATWG `URL`; anything else axios cannot send, and matches no origin here. */
export function urlText(url: unknown): string {
  if (typeof url === 'string') return url;
  return url instanceof URL ? url.href : '';
}

export function isAbsoluteUrl(url: string): boolean {
  return ABSOLUTE_URL.test(url);
}

/** The URL axios will request, resolved the way axios resolves it (`baseURL` + `url`, or an absolute `url`). */
export function resolveRequestUrl(
  config: Pick<InternalAxiosRequestConfig, 'url' | 'baseURL' | 'allowAbsoluteUrls'>,
): URL | undefined {
  return parseUrl(resolveRequestText(config));
}

/** `resolveRequestUrl`'s text, not parsed. */
export function resolveRequestText(
  config: Pick<InternalAxiosRequestConfig, 'url' | 'baseURL' | 'allowAbsoluteUrls'>,
): string {
  const url = urlText(config.url);
  const useBase = config.baseURL && (!isAbsoluteUrl(url) || config.allowAbsoluteUrls === false);
  return useBase
    ? url
      ? `${config.baseURL!.replace(/\/?\/$/, '')}/${url.replace(/^\/+/, '')}`
      : config.baseURL!
    : url;
}

/**
 * The scheme of `resolveRequestUrl(config)` (`'http:'`), read off the text when it starts with a plain lower-case
 * `http://` or `https://`, which only that scheme parses from; anything else is parsed.
 */
export function requestProtocol(
  config: Pick<InternalAxiosRequestConfig, 'url' | 'baseURL' | 'allowAbsoluteUrls'>,
): string | undefined {
  const url = urlText(config.url);
  const text = config.baseURL && (!isAbsoluteUrl(url) || config.allowAbsoluteUrls === false) ? config.baseURL : url;
  if (text.startsWith('http://')) return 'http:';
  if (text.startsWith('https://')) return 'https:';
  return resolveRequestUrl(config)?.protocol;
}

/**
 * Whether requests to `url` may carry the token: same scheme, host and port as an allowed origin, and no userinfo
 * (credentials of their own in a URL say it is meant for someone else, whatever its host).
 */
export function isAllowedUrl(url: URL | undefined, allowedOrigins: ReadonlySet<string>): boolean {
  return url !== undefined && !url.username && !url.password && allowedOrigins.has(url.origin);
}

/**
 * Whether the URL text `href` starts with one of `origins` (serialized, as `URL.origin` gives them) followed by the
 * end of its authority: it then parses to that origin, with no userinfo, whatever follows (nothing after the
 * authority can make URL parsing fail). Decided without parsing; `false` says only that this shortcut does not apply.
 */
export function startsWithOrigin(href: string, origins: readonly string[]): boolean {
  for (const origin of origins) {
    if (!href.startsWith(origin)) continue;
    const next = href.charCodeAt(origin.length);
    // End of text, '/', '?' or '#': the authority ends exactly where the origin does.
    if (Number.isNaN(next) || next === 0x2f || next === 0x3f || next === 0x23) return true;
  }
  return false;
}

export function parseUrl(value: unknown, base?: URL): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return new URL(value, base);
  } catch {
    return undefined;
  }
}

/** A body that is consumed by sending it: node and WHATWG streams, and any async iterable. */
export function isNonReplayable(data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false;
  const body = data as { pipe?: unknown; getReader?: unknown; [Symbol.asyncIterator]?: unknown };
  return (
    typeof body.pipe === 'function' ||
    typeof body.getReader === 'function' ||
    typeof body[Symbol.asyncIterator] === 'function'
  );
}
