import { randomUUID } from 'node:crypto';
import { PlatformOutboxError } from './outbox.errors.js';
import { jobIdOf } from './outbox.identity.js';
import type { OutboxBodyCodec, OutboxMessage, StoredMessage } from './outbox.types.js';

/** What a job's data reads as when Redis holds something that is not JSON there. */
export const UNREADABLE = '[data that is not JSON]';

/** A job's data from its raw JSON in Redis (`UNREADABLE` when it is not JSON). */
export function storedData(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return UNREADABLE;
  }
}

/** Never at rest, whatever the allow-list says: the client adds the token itself at each send. */
const NEVER_STORED = new Set(['authorization', 'proxy-authorization', 'cookie']);
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** Printable ASCII without spaces or `:` (BullMQ's job ids cannot hold one), not all digits (nor integers). */
const KEY = /^(?!\d+$)[\x21-\x39\x3b-\x7e]{1,255}$/;
/** An HTTP field name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * A path on the integration's platform: one `/`, then no `/` or `\` (`//host` and `/\host` are another host to a URL
 * parser), no `\` anywhere, no space or control character.
 */
function isPlatformPath(path: unknown): path is string {
  if (typeof path !== 'string' || path.length > 2048 || !/^\/(?![/\\])/.test(path) || /[\\\s]/.test(path)) return false;
  for (let i = 0; i < path.length; i += 1) if (path.charCodeAt(i) < 0x20 || path.charCodeAt(i) === 0x7f) return false;
  return true;
}
/** The most a job may hold, as JSON: Redis keeps every job in memory. */
const MAX_MESSAGE_BYTES = 1_048_576;

/** The allow-list in lower case; refuses a header that is never stored. */
export function storedHeaderNames(names: readonly string[] = []): ReadonlySet<string> {
  const lower = names.map((name) => String(name).toLowerCase());
  const refused = lower.filter((name) => NEVER_STORED.has(name));
  if (refused.length > 0) {
    throw new PlatformOutboxError(
      'config',
      `PlatformOutboxModule: storedHeaders may not list ${refused.join(', ')}: credentials are added at each send and never stored`,
    );
  }
  return new Set(lower);
}

type Fail = (what: string) => never;

/** The fields `enqueue` takes and a worker reads back from Redis, checked by the same rules. */
function checkFields(
  input: Record<string, unknown>,
  allowed: ReadonlySet<string>,
  fail: Fail,
): Omit<StoredMessage, 'body' | 'sealed' | 'idempotencyKey' | 'mayHaveReached'> {
  const { integration, tenant, path, headers } = input;
  const method = typeof input.method === 'string' ? input.method.toUpperCase() : '';
  if (!METHODS.has(method)) fail(`method must be one of ${[...METHODS].join(', ')}`);
  if (!isPlatformPath(path)) fail('path must be a path on the platform starting with one /, such as /api/messages');
  if (integration !== undefined && tenant !== undefined) fail('give integration or tenant, not both');
  if (integration !== undefined && (typeof integration !== 'string' || integration === ''))
    fail('integration must be a non-empty string');
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant === '')) fail('tenant must be a non-empty string');
  if (headers !== undefined && (typeof headers !== 'object' || headers === null || Array.isArray(headers)))
    fail('headers must be an object of names and values');
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) fail('a header name is not a valid HTTP token');
    if (NEVER_STORED.has(name.toLowerCase()) || !allowed.has(name.toLowerCase())) {
      fail(`the header ${name} is not in storedHeaders; list it there to store it with the message`);
    }
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) fail(`the header ${name} must be a string on one line`);
    kept[name] = value;
  }
  return {
    ...(integration !== undefined && { integration: integration }),
    ...(tenant !== undefined && { tenant: tenant }),
    method,
    path: path,
    ...(Object.keys(kept).length > 0 && { headers: kept }),
  };
}

/** The message as BullMQ stores it (`JSON.stringify` of the job's data), refused over `MAX_MESSAGE_BYTES`. */
function checkSize(stored: StoredMessage, fail: Fail): string {
  const json = JSON.stringify(stored);
  if (Buffer.byteLength(json) > MAX_MESSAGE_BYTES)
    fail(`the message is over ${MAX_MESSAGE_BYTES} bytes as JSON; send large content by reference`);
  return json;
}

/** The message checked, its id (owner and key), what the job stores, and that as the JSON Redis will hold. */
export function checkMessage(
  message: OutboxMessage,
  allowed: ReadonlySet<string>,
): { readonly id: string; readonly key: string; readonly stored: StoredMessage; readonly json: string } {
  const fail: Fail = (what) => {
    throw new PlatformOutboxError('invalid_message', `PlatformOutbox.enqueue: ${what}`);
  };
  if (typeof message !== 'object' || message === null) fail('the message must be an object');
  const { body, idempotencyKey } = message;
  const fields = checkFields(message as unknown as Record<string, unknown>, allowed, fail);
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !KEY.test(idempotencyKey)))
    fail('idempotencyKey must be 1 to 255 printable ASCII characters without spaces or ":", and not only digits');
  const key = idempotencyKey ?? randomUUID();
  const stored: StoredMessage = { ...fields, ...(body !== undefined && { body }), idempotencyKey: key };
  const json = checkSize(stored, fail);
  return { id: jobIdOf(stored, key), key, stored, json };
}

/**
 * The checked message with its body as `codec` encodes it, and as the JSON Redis will hold, bounded too. The codec's
 * own failure, whatever it threw, is the message's.
 */
export async function sealMessage(
  checked: StoredMessage,
  codec: OutboxBodyCodec,
): Promise<{ readonly stored: StoredMessage; readonly json: string }> {
  const fail: Fail = (what) => {
    throw new PlatformOutboxError('invalid_message', `PlatformOutbox.enqueue: ${what}`);
  };
  let body: string;
  try {
    body = await codec.encode(checked.body);
  } catch (error) {
    throw new PlatformOutboxError('invalid_message', 'PlatformOutbox.enqueue: bodyCodec.encode failed on the body', {
      cause: error,
    });
  }
  const stored: StoredMessage = { ...checked, body, sealed: true };
  return { stored, json: checkSize(stored, fail) };
}

/**
 * A job's data as a worker reads it from Redis, checked as `enqueue` checks a message: anything that can write to
 * Redis can write a job, and a job that `enqueue` would have refused is never sent. Returns the message rebuilt from
 * the known fields only, and the key its sends carry.
 */
export function checkStoredJob(
  data: unknown,
  jobId: string,
  allowed: ReadonlySet<string>,
): { readonly message: StoredMessage; readonly key: string } {
  const fail: Fail = (what) => {
    throw new PlatformOutboxError('invalid_message', `the job is not one enqueue would store: ${what}`);
  };
  if (data === UNREADABLE) fail('its data is not JSON');
  if (typeof data !== 'object' || data === null || Array.isArray(data)) fail('its data is not a message');
  const input = data as Record<string, unknown>;
  const fields = checkFields(input, allowed, fail);
  const { body, sealed, idempotencyKey, mayHaveReached } = input;
  if (sealed !== undefined && (sealed !== true || typeof body !== 'string')) fail('a sealed body must be a string');
  // Jobs stored before keys were scoped carry none: their id was their key.
  const key = idempotencyKey ?? jobId;
  if (typeof key !== 'string' || !KEY.test(key)) fail('its idempotency key is not one enqueue takes');
  const message: StoredMessage = {
    ...fields,
    ...(body !== undefined && { body }),
    ...(sealed === true && { sealed: true as const }),
    idempotencyKey: key,
    ...(mayHaveReached === true && { mayHaveReached: true as const }),
  };
  checkSize(message, fail);
  return { message, key: key };
}
