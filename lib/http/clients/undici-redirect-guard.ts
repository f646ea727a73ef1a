import { isRedirectStatus, mustNotFollow } from '../engine/redirect.rules.js';
import type { BearerPolicy } from '../engine/bearer.policy.js';
import type { LegacyHandler } from './undici-handlers.js';
import { rawHeaderValue, type RawHeaders } from './undici-headers.util.js';

/**
 * A redirect answered by `origin` + `path` as its client gets it through the dispatcher: without its `Location` when
 * following it would ask the dispatcher for a hop that must not carry the token but that it could not tell from a
 * new call to an allowed origin (`mustNotFollow`). The client then stops at that redirect, as with a redirect mode
 * of `manual`; anything else is handed on as it came.
 */
export function guardedRedirect(
  policy: BearerPolicy,
  status: number,
  rawHeaders: RawHeaders,
  target: { origin?: string | URL; path?: string },
  fromAllowed: boolean,
): RawHeaders {
  // undici's redirect interceptor follows 300 too, which the clients that follow redirects themselves leave alone.
  if (status !== 300 && !isRedirectStatus(status)) return rawHeaders;
  const location = rawHeaderValue(rawHeaders, 'location');
  if (location === undefined) return rawHeaders;
  let from: URL;
  try {
    from = new URL(target.path ?? '/', target.origin);
  } catch {
    return rawHeaders;
  }
  if (!mustNotFollow(location, from, fromAllowed, (origin) => policy.isAllowedOrigin(origin))) return rawHeaders;
  const kept: RawHeaders[number][] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (String(rawHeaders[i]).toLowerCase() !== 'location') kept.push(rawHeaders[i], rawHeaders[i + 1]);
  return kept;
}

/** The handler of a request to a foreign origin: every callback passed on as it came, but its redirects guarded. */
export class ForeignHopHandler implements LegacyHandler {
  constructor(
    private readonly policy: BearerPolicy,
    private readonly target: { origin?: string | URL; path?: string },
    private readonly handler: LegacyHandler,
  ) {}

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.handler.onConnect?.(abort, context);
  }

  onBodySent(chunk: unknown): void {
    this.handler.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    this.handler.onRequestSent?.();
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void, statusText?: string): boolean | void {
    const headers = guardedRedirect(this.policy, statusCode, rawHeaders, this.target, false);
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText);
  }

  onData(chunk: Buffer): boolean | void {
    return this.handler.onData?.(chunk);
  }

  onComplete(rawTrailers: RawHeaders | null): void {
    this.handler.onComplete?.(rawTrailers);
  }

  onError(error: Error): void {
    this.handler.onError?.(error);
  }

  onUpgrade(statusCode: number, rawHeaders: RawHeaders, socket: unknown): void {
    this.handler.onUpgrade?.(statusCode, rawHeaders, socket);
  }
}
