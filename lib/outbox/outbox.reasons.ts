import type { TokenExchangeError } from '../index.js';

/** The most of an error's text read for a reason. */
const REASON_INPUT = 4_096;
/** The most of it a reason shows. */
const REASON_LENGTH = 300;
/** Three dot-separated runs of base64url of 8 characters or more: the shape of a JWT. */
const JWT_SHAPED = /[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}/g;
// eslint-disable-next-line no-control-regex -- control characters are what this flattens
const CONTROL = /[\s\u0000-\u001f\u007f]+/g;
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
 * `text` as a reason may show it: a URL's user and password, a bearer token and anything shaped like a JWT taken out,
 * control characters flattened, at most 300 characters.
 */
export function boundedReason(text: string): string {
  const scrubbed = text
    .slice(0, REASON_INPUT)
    .replace(/(:\/\/)[^/\s@]*@/g, '$1[REDACTED]@')
    .replace(/\b(bearer|basic)\s+[^\s,;)]+/gi, '$1 [REDACTED]')
    .replace(JWT_SHAPED, '[REDACTED]')
    .replace(CONTROL, ' ')
    .trim();
  return scrubbed.length > REASON_LENGTH ? `${scrubbed.slice(0, REASON_LENGTH)}…` : scrubbed;
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

/** Prefixes of a job's failed reason: the lists and the events tell refusals, transient failures and stalls apart. */
export const REFUSED = 'refused: ';
export const TRANSIENT = 'transient: ';
export const AMBIGUOUS = 'ambiguous: ';
const STALLED = 'stalled: ';
const OUR_PREFIXES = [REFUSED, TRANSIENT, AMBIGUOUS];

/**
 * A job's failed reason as the lists and events show it. The worker's own reasons are kept as they are; BullMQ's stall
 * limit (`job stalled more than allowable limit`) says what it means; anything else BullMQ recorded is its failure
 * on Redis, `redis: …`.
 */
export function failureReason(recorded: string | undefined): string {
  const reason = recorded ?? '';
  if (OUR_PREFIXES.some((prefix) => reason.startsWith(prefix))) return reason;
  if (/stalled more than allowable limit/.test(reason)) {
    return `${STALLED}its worker stopped mid-send more often than maxStalledCount allows (${boundedReason(reason)})`;
  }
  return redisReason(reason);
}
