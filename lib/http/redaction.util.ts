import { ClientRequest } from 'node:http';
import {
  AxiosError,
  AxiosHeaders,
  CanceledError,
  isAxiosError,
  isCancel,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { REDACTED } from '../util/remote-text.util.js';
import { detachedBody, detachedConfig } from './error-detach.js';

export const REDACTED_BEARER = `Bearer ${REDACTED}`;
const MAX_DATA_DEPTH = 6;

function redactString<T>(value: T, tokens: readonly string[]): T {
  if (typeof value !== 'string') return value;
  let text: string = value;
  for (const token of tokens) if (token && text.includes(token)) text = text.split(token).join(REDACTED);
  return text as T;
}

/** A response body that echoes the request (some servers do, on errors) loses the token too. */
function redactData(data: unknown, tokens: readonly string[], depth = 0): unknown {
  if (typeof data === 'string') return redactString(data, tokens);
  if (!data || typeof data !== 'object' || depth >= MAX_DATA_DEPTH || ArrayBuffer.isView(data)) return data;
  if (typeof (data as { pipe?: unknown }).pipe === 'function' || data instanceof ReadableStream) return data;
  const record = data as Record<string, unknown>;
  for (const key of Object.keys(record)) record[key] = redactData(record[key], tokens, depth + 1);
  return data;
}

/** Response headers as a fresh bag, with any header that echoes a token cleaned. */
function redactedHeaders(headers: AxiosResponse['headers'], tokens: readonly string[]): AxiosHeaders {
  const copy = new AxiosHeaders();
  for (const [name, value] of Object.entries(AxiosHeaders.from(headers as AxiosHeaders).toJSON()))
    copy.set(name, redactString(value, tokens));
  return copy;
}

/**
 * What a response or error keeps of the request in place of the request itself. A `ClientRequest` leads to its
 * socket, and a keep-alive socket soon carries another request, whose head holds that request's token: whoever
 * inspects an old error would read a live one. A fetch `Request` holds the headers sent. The snapshot holds neither.
 */
class DetachedRequest {
  constructor(
    readonly method: string | undefined,
    readonly protocol: string | undefined,
    readonly host: string | undefined,
    readonly path: string | undefined,
  ) {}
}

/** Read through the documented properties of node's `ClientRequest` and of a fetch `Request`, nothing private. */
export function detachedRequest(request: unknown): DetachedRequest | undefined {
  if (request instanceof ClientRequest)
    return new DetachedRequest(request.method, request.protocol, request.host, request.path);
  if (typeof Request !== 'undefined' && request instanceof Request) {
    const url = new URL(request.url);
    return new DetachedRequest(request.method, url.protocol, url.hostname, `${url.pathname}${url.search}`);
  }
  return undefined;
}

/**
 * The response a caller receives: a new object holding what users read (data, status, headers, the config) and a
 * detached request. With `tokens`, the response is one that may be logged like an error (non-2xx): the token is
 * removed from an echoing body and headers, and its config loses the agents, as an error's does (`detachedConfig`).
 */
export function leavingResponse<T>(
  response: AxiosResponse<T>,
  config: InternalAxiosRequestConfig,
  tokens: readonly string[] = [],
): AxiosResponse<T> {
  return builtResponse(response, tokens.length === 0 ? config : detachedConfig(config), tokens, response.data);
}

function builtResponse<T>(
  response: AxiosResponse<T>,
  config: InternalAxiosRequestConfig,
  tokens: readonly string[],
  data: T,
): AxiosResponse<T> {
  return {
    data: tokens.length === 0 ? data : (redactData(data, tokens) as T),
    status: response.status,
    statusText: redactString(response.statusText, tokens),
    headers: tokens.length === 0 ? response.headers : redactedHeaders(response.headers, tokens),
    config,
    request: detachedRequest(response.request),
  };
}

/** The cause of a network error as a plain error: its name, message, code and the other plain fields node sets. */
function plainCause(cause: unknown, tokens: readonly string[]): Error | undefined {
  if (!(cause instanceof Error)) return undefined;
  const copy = new Error(redactString(cause.message, tokens));
  copy.name = cause.name;
  copy.stack = redactString(cause.stack, tokens);
  const fields = cause as unknown as Record<string, unknown>;
  for (const key of ['code', 'errno', 'syscall', 'address', 'port'])
    if (['string', 'number'].includes(typeof fields[key]))
      (copy as unknown as Record<string, unknown>)[key] = fields[key];
  return copy;
}

/**
 * An error leaving the library, built new: the message, code, status, the caller's config (its Authorization shown
 * as `Bearer [REDACTED]`, its agents left out: `detachedConfig`), the response with an echoing body cleaned, the
 * cause's code, and a detached request. The axios error it replaces, which holds the request, its socket and the
 * header sent, stays behind.
 */
export function leavingError(error: unknown, callers: InternalAxiosRequestConfig, tokens: readonly string[]): unknown {
  if (!isAxiosError(error)) return error;
  const config = detachedConfig(callers);
  const request = detachedRequest(error.request);
  const message = redactString(error.message, tokens);
  const fresh = isCancel(error)
    ? new CanceledError(message, config, request)
    : new AxiosError(
        message,
        error.code,
        config,
        request,
        error.response && builtResponse(error.response, config, tokens, detachedBody(error.response.data)),
      );
  fresh.stack = redactString(error.stack, tokens);
  const cause = plainCause((error as { cause?: unknown }).cause, tokens);
  if (cause) (fresh as { cause?: unknown }).cause = cause;
  return fresh;
}

/**
 * The error axios's own `settle` builds for a status `validateStatus` refuses, with the same message and code; its
 * config, and its response's, without the agents (`detachedConfig`).
 */
export function statusError(response: AxiosResponse, callers: InternalAxiosRequestConfig): AxiosError {
  const code = [AxiosError.ERR_BAD_REQUEST, AxiosError.ERR_BAD_RESPONSE][Math.floor(response.status / 100) - 4];
  const config = detachedConfig(callers);
  return new AxiosError(`Request failed with status code ${response.status}`, code, config, response.request, {
    ...response,
    config,
    data: detachedBody(response.data),
  });
}
