import { Stream } from 'node:stream';
import { AxiosHeaders, isAxiosError, type AxiosError, type AxiosResponse } from 'axios';
import { REDACTED } from '../util/remote-text.util.js';

export const REDACTED_BEARER = `Bearer ${REDACTED}`;
const MAX_DATA_DEPTH = 6;

function redactString<T>(value: T, token: string): T {
  return (typeof value === 'string' && value.includes(token) ? value.split(token).join(REDACTED) : value) as T;
}

function redactHeaderBag(headers: unknown, token: string): void {
  if (!headers || typeof headers !== 'object') return;
  if (headers instanceof AxiosHeaders) {
    const value = headers.get('Authorization');
    if (typeof value === 'string' && value.includes(token)) headers.set('Authorization', REDACTED_BEARER);
    return;
  }
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    if (headers.get('authorization')?.includes(token)) headers.set('authorization', REDACTED_BEARER);
    return;
  }
  const bag = headers as Record<string, unknown>;
  for (const name of Object.keys(bag)) {
    if (name.toLowerCase() === 'authorization' && typeof bag[name] === 'string' && bag[name].includes(token)) {
      bag[name] = REDACTED_BEARER;
    }
  }
}

/** Buffered writes of a request or socket: `{ data }` / `{ chunk }` entries, or one string. */
function redactBuffered(buffer: unknown, token: string): unknown {
  if (typeof buffer === 'string') return redactString(buffer, token);
  if (Array.isArray(buffer)) {
    for (const entry of buffer as Array<Record<string, unknown>>) {
      if (entry && typeof entry === 'object') {
        if ('data' in entry) entry.data = redactString(entry.data, token);
        if ('chunk' in entry) entry.chunk = redactString(entry.chunk, token);
      }
    }
  }
  return buffer;
}

/**
 * The node request objects axios keeps on an error hold the request head, Authorization line included: as sent
 * (`_header`), as set (a private header store), as still queued when the connection failed (`outputData`, the
 * socket's `_pendingData`), and in follow-redirects' copies. A socket still alive may carry someone else's request
 * by now, so only a destroyed one is touched.
 */
function redactNodeRequest(request: unknown, token: string, seen: Set<unknown>): void {
  if (!request || typeof request !== 'object' || seen.has(request)) return;
  seen.add(request);
  const req = request as Record<string, unknown>;
  if ('_header' in req) req._header = redactString(req._header, token);
  if ('outputData' in req) redactBuffered(req.outputData, token);
  for (const symbol of Object.getOwnPropertySymbols(req)) {
    if (symbol.description !== 'kOutHeaders') continue;
    const outHeaders = (req as Record<symbol, Record<string, unknown> | null>)[symbol];
    const pair: unknown = outHeaders?.authorization;
    if (Array.isArray(pair)) (pair as unknown[])[1] = redactString((pair as unknown[])[1], token);
  }
  const socket = req.socket as (Record<string, unknown> & { destroyed?: boolean }) | null | undefined;
  if (socket?.destroyed && socket._httpMessage === request)
    socket._pendingData = redactBuffered(socket._pendingData, token);
  if (req instanceof Request) redactHeaderBag(req.headers, token);
  const options = req._options as { headers?: unknown } | undefined;
  if (options) redactHeaderBag(options.headers, token);
  redactNodeRequest(req._currentRequest, token, seen);
  redactNodeRequest(req._redirectable, token, seen);
  const redirects = req._redirects;
  if (Array.isArray(redirects)) for (const r of redirects) redactNodeRequest(r, token, seen);
}

/** A response body that echoes the request (some servers do, on errors) loses the token too. */
function redactData(data: unknown, token: string, depth = 0): unknown {
  if (typeof data === 'string') return redactString(data, token);
  if (!data || typeof data !== 'object' || depth >= MAX_DATA_DEPTH || ArrayBuffer.isView(data)) return data;
  const record = data as Record<string, unknown>;
  for (const key of Object.keys(record)) record[key] = redactData(record[key], token, depth + 1);
  return data;
}

/**
 * What an error keeps of node's request in place of the request itself. A `ClientRequest` leads to its socket, and a
 * keep-alive socket soon carries another request, whose head (`socket._httpMessage._header`) holds that request's
 * token: whoever inspects an old error would read a live one. The snapshot has no such path.
 */
export class DetachedRequest {
  constructor(
    readonly method: string | undefined,
    readonly protocol: string | undefined,
    readonly host: string | undefined,
    readonly path: string | undefined,
    /** Where the response came from after redirects, when node's adapter followed any. */
    readonly responseUrl: string | undefined,
  ) {}
}

function detached(request: unknown): unknown {
  // Node's ClientRequest and follow-redirects' RedirectableRequest are streams; a fetch `Request` holds no socket.
  if (!(request instanceof Stream)) return request;
  const redirectable = request as unknown as { _currentRequest?: unknown; _currentUrl?: unknown };
  const current = (redirectable._currentRequest ?? request) as Record<string, unknown> & {
    res?: { responseUrl?: unknown };
  };
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return new DetachedRequest(
    text(current.method),
    text(current.protocol),
    text(current.host),
    text(current.path),
    text(redirectable._currentUrl) ?? text(current.res?.responseUrl),
  );
}

function detachRequest(holder: { request?: unknown } | undefined): void {
  if (!holder || holder.request === undefined) return;
  Object.defineProperty(holder, 'request', {
    value: detached(holder.request),
    enumerable: false,
    configurable: true,
    writable: true,
  });
}

/**
 * A response that reaches the caller without an error (a non-2xx one that `validateStatus` let through) gets what
 * an error gets: the token redacted from its config and request, and the request detached from its socket.
 */
export function redactResponse(response: AxiosResponse | undefined, tokens: readonly string[]): void {
  if (!response) return;
  for (const token of tokens) {
    if (!token) continue;
    redactHeaderBag(response.config?.headers, token);
    redactNodeRequest(response.request, token, new Set());
    redactHeaderBag(response.headers, token);
    response.data = redactData(response.data, token);
  }
  detachRequest(response);
}

/**
 * Removes the bearer tokens from every place an axios error carries them, keeping the error's shape: the request
 * config's headers become `Authorization: Bearer [REDACTED]`, the raw request objects are scrubbed and replaced by a
 * detached, hidden snapshot, and an echoing response body is cleaned, so `JSON.stringify`, `util.inspect` and
 * loggers show no token, neither this request's nor a later one's on the same socket.
 */
export function redactAxiosError(error: unknown, tokens: readonly string[]): void {
  if (!isAxiosError(error)) return;
  const axiosError = error as AxiosError;
  for (const token of tokens) {
    if (!token) continue;
    redactHeaderBag(axiosError.config?.headers, token);
    redactNodeRequest(axiosError.request, token, new Set());
  }
  redactResponse(axiosError.response, tokens);
  detachRequest(axiosError);
}
