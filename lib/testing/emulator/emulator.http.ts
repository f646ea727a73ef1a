import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { isLoopbackHost } from '../../util/loopback.util.js';

/** Largest request body the emulator reads; anything bigger is refused without buffering the rest. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;

export type BodyReadResult = { readonly tooLarge: false; readonly body: Buffer } | { readonly tooLarge: true };

/**
 * What the emulator's routes read of a request, whether it came over a socket (`requestFromIncoming`) or not
 * (`answerFetch`'s): so both run the same code.
 */
export interface EmulatorRequest {
  readonly method: string;
  /** The request-target as sent: path and query. */
  readonly url: string;
  /** Names in lower case, as node:http gives them. */
  readonly headers: IncomingHttpHeaders;
  /** The body, up to `limit` bytes (default `MAX_REQUEST_BODY_BYTES`). Read it once. */
  readBody(limit?: number): Promise<BodyReadResult>;
}

export function requestFromIncoming(req: IncomingMessage): EmulatorRequest {
  return {
    method: req.method ?? '',
    url: req.url ?? '/',
    headers: req.headers,
    readBody: (limit) => readBody(req, limit),
  };
}

/**
 * Reads the request body up to `limit` bytes. A declared `Content-Length` over the limit is refused before reading;
 * a chunked body is refused as soon as it passes the limit. Either way the caller must answer with
 * `Connection: close`, since the rest of the body is left unread on the socket.
 */
export function readBody(req: IncomingMessage, limit = MAX_REQUEST_BODY_BYTES): Promise<BodyReadResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ tooLarge: true });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limit) {
        req.off('data', onData);
        req.pause();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve({ tooLarge: false, body: Buffer.concat(chunks) }));
    req.once('error', reject);
  });
}

/** `type/subtype` in lower case and the `charset` parameter (lower case, unquoted), if any. */
export function parseMediaType(header: string | undefined): { type: string; charset?: string } | undefined {
  if (!header) return undefined;
  const [type, ...parameters] = header.split(';');
  let charset: string | undefined;
  for (const parameter of parameters) {
    const [name, value] = parameter.split('=', 2).map((part) => part.trim());
    if (name?.toLowerCase() === 'charset' && value) charset = value.replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return { type: type.trim().toLowerCase(), charset };
}

export interface EmulatorResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as is (its content type must then be in `headers`). */
  body?: string | object;
  /** Close the connection after this response (the request body was not read to its end). */
  closeConnection?: boolean;
}

/** A response as it goes on the wire: every header decided, the body serialized. */
export interface RenderedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload?: string;
}

/**
 * The headers and payload of `response`, with a `Date` header of emulator time. Node's automatic `Date` reads the
 * real clock, which would hide the clock offset a test configured and that the library measures skew from.
 */
export function renderResponse(emulatorNow: number, response: EmulatorResponse): RenderedResponse {
  const headers: Record<string, string> = { date: new Date(emulatorNow).toUTCString() };
  let payload: string | undefined;
  if (typeof response.body === 'string') {
    payload = response.body;
  } else if (response.body !== undefined) {
    payload = JSON.stringify(response.body);
    headers['content-type'] = 'application/json; charset=utf-8';
  }
  if (response.closeConnection) headers.connection = 'close';
  // Lower-cased so a caller's `Content-Type` replaces ours instead of being sent next to it.
  for (const [name, value] of Object.entries(response.headers ?? {})) headers[name.toLowerCase()] = value;
  return { status: response.status, headers, payload };
}

export function sendResponse(res: ServerResponse, rendered: RenderedResponse): void {
  res.sendDate = false;
  res.writeHead(rendered.status, rendered.headers);
  res.end(rendered.payload);
}

/** Writes `response` with a `Date` header of emulator time (`renderResponse`). */
export function writeResponse(res: ServerResponse, emulatorNow: number, response: EmulatorResponse): void {
  sendResponse(res, renderResponse(emulatorNow, response));
}

/**
 * The `Host` values that name an emulator listening at `url` on loopback, lower case. Pages and controls answer only
 * to these, which defeats DNS rebinding: a page on another site cannot make the browser call the emulator by a name
 * of its own.
 */
export function emulatorHostNames(url: string): ReadonlySet<string> {
  const { host, port } = new URL(url);
  return new Set([host, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`].map((name) => name.toLowerCase()));
}

/** Whether the request comes from this machine: 127.0.0.0/8 or ::1, also as an IPv4-mapped IPv6 address. */
export function fromLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress;
  return address !== undefined && isLoopbackHost(address.replace(/^::ffff:/i, ''));
}
