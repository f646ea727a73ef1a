import { AxiosHeaders, isAxiosError, type AxiosError } from 'axios';

export const REDACTED = '[REDACTED]';
const REDACTED_BEARER = `Bearer ${REDACTED}`;
/** Three base64url segments: anything shaped like a JWT is removed from text that came from the network. */
const JWT_LIKE = /[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const MAX_REMOTE_TEXT = 300;

/**
 * Text from the platform (an `error_description`) is shown to users, so it is cut to a sane length, stripped of
 * control characters, and cleaned of anything secret it might echo back: the given values and JWT-shaped strings.
 */
export function sanitizeRemoteText(text: unknown, secrets: readonly string[] = []): string | undefined {
  if (typeof text !== 'string') return undefined;
  let clean = text;
  for (const secret of secrets) if (secret) clean = clean.split(secret).join(REDACTED);
  clean = clean.replace(JWT_LIKE, REDACTED).replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  return clean.length > MAX_REMOTE_TEXT ? `${clean.slice(0, MAX_REMOTE_TEXT)}…` : clean;
}

function redactString(value: unknown, token: string): unknown {
  return typeof value === 'string' && value.includes(token) ? value.split(token).join(REDACTED) : value;
}

function redactHeaderBag(headers: unknown, token: string): void {
  if (!headers || typeof headers !== 'object') return;
  if (headers instanceof AxiosHeaders) {
    const value = headers.get('Authorization');
    if (typeof value === 'string' && value.includes(token)) headers.set('Authorization', REDACTED_BEARER);
    return;
  }
  const bag = headers as Record<string, unknown>;
  for (const name of Object.keys(bag)) {
    if (name.toLowerCase() === 'authorization' && typeof bag[name] === 'string' && (bag[name] as string).includes(token)) {
      bag[name] = REDACTED_BEARER;
    }
  }
}

/** The node request objects axios keeps on an error hold the raw request head, Authorization line included. */
function redactNodeRequest(request: unknown, token: string, seen: Set<unknown>): void {
  if (!request || typeof request !== 'object' || seen.has(request)) return;
  seen.add(request);
  const req = request as Record<string, unknown>;
  if ('_header' in req) req._header = redactString(req._header, token);
  // node's ClientRequest keeps the outgoing headers as [name, value] pairs under a private symbol.
  for (const symbol of Object.getOwnPropertySymbols(req)) {
    if (symbol.description !== 'kOutHeaders') continue;
    const outHeaders = (req as Record<symbol, Record<string, unknown> | null>)[symbol];
    const pair = outHeaders?.authorization;
    if (Array.isArray(pair)) pair[1] = redactString(pair[1], token);
  }
  const options = req._options as { headers?: unknown } | undefined;
  if (options) redactHeaderBag(options.headers, token);
  redactNodeRequest(req._currentRequest, token, seen);
  redactNodeRequest(req._redirectable, token, seen);
  const redirects = req._redirects;
  if (Array.isArray(redirects)) for (const r of redirects) redactNodeRequest(r, token, seen);
}

/**
 * Removes the bearer token from every place an axios error carries it, keeping the error's shape: the request
 * config's headers become `Authorization: Bearer [REDACTED]`, and the raw request heads are scrubbed, so
 * `JSON.stringify`, `util.inspect` and loggers show no token.
 */
export function redactAxiosError(error: unknown, token: string): void {
  if (!token || !isAxiosError(error)) return;
  const axiosError = error as AxiosError;
  const seen = new Set<unknown>();
  redactHeaderBag(axiosError.config?.headers, token);
  redactHeaderBag(axiosError.response?.config?.headers, token);
  redactNodeRequest(axiosError.request, token, seen);
  redactNodeRequest(axiosError.response?.request, token, seen);
  if (axiosError.response?.headers) redactHeaderBag(axiosError.response.headers, token);
}
