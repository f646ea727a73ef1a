import { randomUUID } from 'node:crypto';
import { PlatformOutboxError } from './outbox.errors.js';
import { jobIdOf } from './outbox.identity.js';
import type { OutboxMessage, StoredMessage } from './outbox.types.js';

/** Never at rest, whatever the allow-list says: the client adds the token itself at each send. */
const NEVER_STORED = new Set(['authorization', 'proxy-authorization', 'cookie']);
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** Printable ASCII without spaces or `:` (BullMQ's job ids cannot hold one), not all digits (nor integers). */
const KEY = /^(?!\d+$)[\x21-\x39\x3b-\x7e]{1,255}$/;
/** An HTTP field name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

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

/** The message checked, its id (owner and key), and what the job stores. */
export function checkMessage(
  message: OutboxMessage,
  allowed: ReadonlySet<string>,
): { readonly id: string; readonly key: string; readonly stored: StoredMessage } {
  const fail = (what: string): never => {
    throw new PlatformOutboxError('invalid_message', `PlatformOutbox.enqueue: ${what}`);
  };
  if (typeof message !== 'object' || message === null) fail('the message must be an object');
  const { integration, tenant, path, body, headers, idempotencyKey } = message;
  const method = typeof message.method === 'string' ? message.method.toUpperCase() : '';
  if (!METHODS.has(method)) fail(`method must be one of ${[...METHODS].join(', ')}`);
  if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//'))
    fail('path must be a path on the platform starting with one /, such as /api/messages');
  if (integration !== undefined && tenant !== undefined) fail('give integration or tenant, not both');
  if (integration !== undefined && (typeof integration !== 'string' || integration === ''))
    fail('integration must be a non-empty string');
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant === '')) fail('tenant must be a non-empty string');
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !KEY.test(idempotencyKey)))
    fail('idempotencyKey must be 1 to 255 printable ASCII characters without spaces or ":", and not only digits');
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) fail('a header name is not a valid HTTP token');
    if (!allowed.has(name.toLowerCase())) {
      fail(`the header ${name} is not in storedHeaders; list it there to store it with the message`);
    }
    if (typeof value !== 'string') fail(`the header ${name} must be a string`);
    kept[name] = value;
  }
  const key = idempotencyKey ?? randomUUID();
  const stored: StoredMessage = {
    ...(integration !== undefined && { integration }),
    ...(tenant !== undefined && { tenant }),
    method,
    path,
    ...(body !== undefined && { body }),
    ...(Object.keys(kept).length > 0 && { headers: kept }),
    idempotencyKey: key,
  };
  return { id: jobIdOf(stored, key), key, stored };
}
