import {
  PLATFORM_AUTH_RETRY_HEADER,
  PlatformAuthError,
  PlatformTenantConfigError,
  RateLimitWaitError,
  TokenExchangeError,
  UnknownTenantError,
} from '../index.js';
import { PlatformOutboxError } from './outbox.errors.js';
import { boundedReason, describeCause, exchangeReason } from './outbox.reasons.js';
import type { StoredMessage } from './outbox.types.js';

/** How an attempt ended, as the queue needs it: done, never again, or again later. */
export type AttemptVerdict =
  | { readonly kind: 'sent'; readonly status: number }
  | { readonly kind: 'refused'; readonly reason: string }
  | {
      readonly kind: 'transient';
      readonly reason: string;
      /** The request may have reached the platform: reconcile before sending it again. */
      readonly ambiguous: boolean;
      readonly retryAfterMs?: number;
    }
  /** Not sent: the integration's rate limit (or a hold after a `Retry-After`) has no turn for it before `waitMs`. */
  | { readonly kind: 'held'; readonly waitMs: number };

/** `fetch` as the integration's or tenant's `PlatformFetch` offers it. */
export type SendFetch = (input: string, init: RequestInit) => Promise<Response>;

/**
 * A 4xx that will not change on a re-send. Every other failed answer is tried again: a job is re-sent with its
 * idempotency key, so a server error cannot act twice; a 401 is the token's fault, not the message's, and a later
 * attempt carries another token; 408 and 429 say "not now".
 */
function isRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 401 && status !== 408 && status !== 429;
}

/** `Sun, 06 Nov 1994 08:49:37 GMT`: the HTTP-date senders must use (RFC 9110 §5.6.7). */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const MONTHS = 'JanFebMarAprMayJunJulAugSepOctNovDec';

/**
 * `Retry-After` as ms from `nowMs`: delay-seconds or an IMF-fixdate. Anything else (the obsolete date forms
 * included) is no wait the outbox honours: its own back-off applies.
 */
function retryAfterMs(value: string | null, nowMs: number): number | undefined {
  const text = value?.trim() ?? '';
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const date = IMF_FIXDATE.exec(text);
  const month = date ? MONTHS.indexOf(date[2]) / 3 : -1;
  if (!date || !Number.isInteger(month)) return undefined;
  const [day, year, hours, minutes, seconds] = [date[1], date[3], date[4], date[5], date[6]].map(Number);
  const at = Date.UTC(year, month, day, hours, minutes, seconds);
  // Date.UTC rolls 31 Feb over into March: such a date is malformed, not a later one.
  return new Date(at).getUTCDate() === day && hours < 24 ? Math.max(0, at - nowMs) : undefined;
}

/** Only what names the failure: an error code of the platform's form, never free text that could echo the body. */
const ERROR_CODE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/** The most of an error body read for its code: a body past it is cut off, and its connection closed. */
export const ERROR_BODY_BYTES = 4_096;

/**
 * Up to `ERROR_BODY_BYTES` of the body as text, or `undefined` past them or when the read fails (a code cannot be read
 * from part of the JSON). The stream is cancelled however the read ends: a body cut off closes its connection.
 */
async function boundedText(response: Response): Promise<string | undefined> {
  if (!response.body) return '';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      if ((size += read.value.byteLength) > ERROR_BODY_BYTES) return undefined;
      chunks.push(read.value);
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch {
    return undefined;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

async function errorCode(response: Response): Promise<string | undefined> {
  const text = await boundedText(response);
  if (text === undefined) return undefined;
  try {
    const { error } = JSON.parse(text) as { error?: unknown };
    return typeof error === 'string' && ERROR_CODE.test(error) ? error : undefined;
  } catch {
    return undefined;
  }
}

/** Failures before the request left this process: nothing reached the platform, so no reconcile is needed. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function causeCode(error: unknown): string | undefined {
  for (let cause: unknown = error, depth = 0; cause && depth < 4; depth += 1) {
    const { code } = cause as { code?: unknown };
    if (typeof code === 'string' && code !== '') return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The verdict on an attempt that threw instead of answering. */
export function thrownVerdict(error: unknown): AttemptVerdict {
  // The integration's gate let nothing go: no attempt was made, and none is spent.
  if (error instanceof RateLimitWaitError) return { kind: 'held', waitMs: error.waitMs };
  // The token could not be had: nothing was sent, and the exchange's own rules say whether it can change.
  if (error instanceof TokenExchangeError) {
    return { kind: 'transient', reason: exchangeReason(error), ambiguous: false };
  }
  // No such integration or tenant: no retry will make one appear; re-queue the job once it is configured.
  const unknown =
    error instanceof UnknownTenantError ||
    error instanceof PlatformTenantConfigError ||
    (error instanceof PlatformOutboxError && error.reason === 'not_found');
  if (unknown) return { kind: 'refused', reason: boundedReason(error.message) };
  if (error instanceof PlatformAuthError) return { kind: 'transient', reason: describeCause(error), ambiguous: false };
  const name = (error as { name?: unknown } | undefined)?.name;
  if (name === 'TimeoutError') return { kind: 'transient', reason: 'the send timed out', ambiguous: true };
  const code = causeCode(error);
  // The chain names the root (`fetch failed: connect ECONNREFUSED 127.0.0.1:8443`), not only its code.
  if (code !== undefined && NOT_SENT.has(code)) {
    return { kind: 'transient', reason: `connection failed: ${describeCause(error)}`, ambiguous: false };
  }
  return { kind: 'transient', reason: `connection lost: ${describeCause(error)}`, ambiguous: true };
}

/** The verdict on the platform's answer. */
export async function answerVerdict(response: Response, nowMs: number): Promise<AttemptVerdict> {
  if (response.ok) {
    // Read, not cancelled: a cancel aborts the fetch, an AbortError made and dropped per send, while a short answer
    // has mostly arrived whole already. A long one is still cut off.
    await boundedText(response);
    return { kind: 'sent', status: response.status };
  }
  const code = await errorCode(response);
  const reason = `HTTP ${response.status}${code ? ` ${code}` : ''}`;
  if (isRefusal(response.status)) return { kind: 'refused', reason };
  const wait = retryAfterMs(response.headers.get('retry-after'), nowMs);
  return { kind: 'transient', reason, ambiguous: false, ...(wait !== undefined && { retryAfterMs: wait }) };
}

/** One send of `message` with its key, the client's own re-sends off: the queue retries instead. */
export async function sendOnce(
  fetch: SendFetch,
  message: StoredMessage,
  key: { readonly header: string; readonly value: string },
  timeoutMs: number,
  nowMs: () => number,
): Promise<AttemptVerdict> {
  const headers = new Headers(message.headers);
  headers.set(key.header, key.value);
  // The client's re-sends are off for this request: the outbox's back-off replaces them. The header is how the call
  // engine is told; `retry: false` how today's `PlatformFetch` is.
  headers.set(PLATFORM_AUTH_RETRY_HEADER, 'false');
  let body: string | undefined;
  if (message.body !== undefined) {
    body = typeof message.body === 'string' ? message.body : JSON.stringify(message.body);
    if (typeof message.body !== 'string' && !headers.has('content-type'))
      headers.set('content-type', 'application/json');
  }
  const init: RequestInit & { retry: false } = {
    method: message.method,
    headers,
    body,
    signal: AbortSignal.timeout(timeoutMs),
    retry: false,
  };
  try {
    return await answerVerdict(await fetch(message.path, init), nowMs());
  } catch (error) {
    return thrownVerdict(error);
  }
}
