import type { TokenExchangeError } from '../platform-auth.errors.js';
import { sanitizeRemoteText } from '../util/remote-text.util.js';

/** The most of an error's text read for a reason (which shows at most 300 characters of it). */
const REASON_INPUT = 4_096;
/** How deep a chain of causes is followed. */
const CHAIN_DEPTH = 5;

interface ErrorLike {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

/**
 * `text` as a reason may show it: a URL's user and password and a bearer token taken out, then what remote text gets
 * (JWT-shaped strings out, control characters flattened, cut at 300 characters).
 */
export function boundedReason(text: string): string {
  const scrubbed = text
    .slice(0, REASON_INPUT)
    .replace(/(:\/\/)[^/\s@]*@/g, '$1[REDACTED]@')
    .replace(/\b(bearer|basic)\s+[^\s,;)]+/gi, '$1 [REDACTED]');
  return sanitizeRemoteText(scrubbed) ?? '';
}

/** Codes of Node's system and network errors (`ECONNREFUSED`, `UND_ERR_SOCKET`), not a library's own error codes. */
const SYSTEM_CODE = /^(E[A-Z0-9]+|UND_ERR_[A-Z_]+|ERR_[A-Z_]+)$/;

/** A system error's code and where it was going (`ECONNREFUSED 127.0.0.1:6379`), when it says. */
function codeAndAddress(error: ErrorLike): string | undefined {
  if (typeof error.code !== 'string' || !SYSTEM_CODE.test(error.code)) return undefined;
  const address = typeof error.address === 'string' ? error.address : undefined;
  const port = typeof error.port === 'number' || typeof error.port === 'string' ? `:${error.port}` : '';
  return address === undefined ? error.code : `${error.code} ${address}${port}`;
}

/** Each error's own words in the chain: the message, else its name; then the codes of an AggregateError's parts. */
function links(error: unknown): string[] {
  const found: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && typeof current === 'object' && depth < CHAIN_DEPTH; depth += 1) {
    const link = current as ErrorLike;
    const message = typeof link.message === 'string' ? link.message.trim() : '';
    const code = codeAndAddress(link);
    // A message of Node's network errors already names the code and the address.
    if (message !== '')
      found.push(code !== undefined && !message.includes(String(link.code)) ? `${message} (${code})` : message);
    else if (code !== undefined) found.push(code);
    else if (typeof link.name === 'string' && link.name !== 'Error') found.push(link.name);
    if (Array.isArray(link.errors)) {
      const parts = [
        ...new Set(
          link.errors.map((part: ErrorLike) =>
            typeof part?.message === 'string' ? (codeAndAddress(part) ?? part.message) : '',
          ),
        ),
      ];
      if (parts.some((part) => part !== '')) found.push(parts.filter((part) => part !== '').join(', '));
    }
    current = link.cause;
  }
  return [...new Set(found)];
}

/**
 * What went wrong, down to the root cause: each error's words in the chain of causes joined by `: `
 * (`Socket closed unexpectedly`, `connect ECONNREFUSED 127.0.0.1:6379`); `unknown error` for an error that says nothing.
 */
export function describeCause(error: unknown): string {
  if (typeof error === 'string') return boundedReason(error || 'unknown error');
  const found = links(error);
  return boundedReason(found.length > 0 ? found.join(': ') : 'unknown error');
}

/** The reason of a failure of Redis (or of BullMQ's commands on it). */
export function redisReason(error: unknown): string {
  return `redis: ${describeCause(error)}`;
}

/**
 * The reason of a send whose token could not be had: the exchange's failure and its root, also through a back-off
 * that holds callers after it (`token exchange failed: backoff (ECONNREFUSED): …`).
 */
export function exchangeReason(error: TokenExchangeError): string {
  const root = [error.networkCode, error.status === undefined ? undefined : `HTTP ${error.status}`, error.oauthError]
    .filter((part) => part !== undefined && part !== '')
    .join(' ');
  return boundedReason(`token exchange failed: ${error.reason}${root === '' ? '' : ` (${root})`}: ${error.summary}`);
}
