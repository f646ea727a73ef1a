import type { IncomingMessage, ServerResponse } from 'node:http';
import { PlatformAuthError, TokenExchangeError } from '../../platform-auth.errors.js';

/**
 * What the proxy answers itself, when it forwards nothing or the platform could not be reached: one JSON shape
 * (`error`, `message`, the fields that say why), built from the proxy's own words and the errors' fields, never a
 * token, an assertion or key material; and no CORS header, ever.
 */
export interface ProxyAnswer {
  readonly status: number;
  readonly error: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
}

/** What a client over a limit is told to wait before it tries again: requests in flight end in about that time. */
const RETRY_AFTER_SECONDS = 1;

/** A request over one of the proxy's limits: the client may try again in a moment. */
export function busy(reason: string): ProxyAnswer {
  return {
    status: 503,
    error: 'proxy_busy',
    message: `${reason}, its limit; try again in a moment`,
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  };
}

/**
 * Answers a request the proxy will not forward whose body may still be on its way. A body of a declared length within
 * the bound is read on and dropped by Node, so that the connection stays usable and the client reads the answer;
 * any other is not read: the connection closes after the answer.
 */
export function refuse(req: IncomingMessage, res: ServerResponse, refusal: ProxyAnswer): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (req.headers['transfer-encoding'] !== undefined || refusal.status === 413 || !Number.isSafeInteger(declared))
    res.shouldKeepAlive = false;
  answer(res, refusal);
}

/** Why the platform could not be reached with a token, as the client gets it: the error's fields, never a secret. */
export function platformFailure(error: unknown): ProxyAnswer {
  if (error instanceof TokenExchangeError) {
    const { code, reason, status, oauthError, hint } = error;
    return {
      status: 502,
      error: 'token_unavailable',
      message: `no access token: ${error.message}`,
      details: { code, reason, status, oauthError, hint },
    };
  }
  if (error instanceof PlatformAuthError)
    return { status: 502, error: 'token_unavailable', message: error.message, details: { code: error.code } };
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  return {
    status: 502,
    error: 'platform_unreachable',
    message: `the platform did not answer${typeof cause === 'string' ? ` (${cause})` : ''}`,
  };
}

export function answer(res: ServerResponse, { status, error, message, details, headers }: ProxyAnswer): void {
  const body = JSON.stringify({ error, message, ...details });
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
