import { createHash } from 'node:crypto';
import { PlatformOutboxKeyConflictError } from './outbox.errors.js';
import type { OutboxBodyCodec, StoredMessage } from './outbox.types.js';

/**
 * The job's id: the message's owner (its integration, its tenant or the default integration) and its key. The
 * platform scopes a key to the client that sends it, so two owners' same key are two messages. The owner is hashed:
 * BullMQ's ids cannot hold a `:`, which a tenant's id or an integration's name may, and a tenant's id stays out of
 * the id that logs and events carry.
 */
export function jobIdOf(message: Pick<StoredMessage, 'integration' | 'tenant'>, key: string): string {
  const owner =
    message.tenant !== undefined
      ? `tenant\0${message.tenant}`
      : message.integration !== undefined
        ? `integration\0${message.integration}`
        : 'default';
  return `${ownerHash(owner)}.${key}`;
}

/** How many owners' hashes are kept: a process with more tenants than this starts over, never grows without end. */
const OWNERS_KEPT = 1_024;
const owners = new Map<string, string>();

/** The owner's hash, computed once per owner rather than once per message. */
function ownerHash(owner: string): string {
  let hash = owners.get(owner);
  if (hash === undefined) {
    if (owners.size >= OWNERS_KEPT) owners.clear();
    hash = createHash('sha256').update(owner).digest('hex').slice(0, 16);
    owners.set(owner, hash);
  }
  return hash;
}

/** JSON with object keys in order, so a body rebuilt with its keys in another order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonical(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

function bodyOf(message: StoredMessage, codec: OutboxBodyCodec | undefined): string {
  if (!message.sealed) return canonical(message.body);
  if (!codec) return '\0sealed';
  try {
    return canonical(codec.decode(String(message.body)));
  } catch {
    // Sealed with another key: not provably the same request, so not acknowledged as one.
    return '\0unreadable';
  }
}

function headersOf(message: StoredMessage): string {
  const lower = Object.entries(message.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]);
  return canonical(Object.fromEntries(lower));
}

/**
 * Refuses `given` (its body not yet sealed) when the job stored under its id holds another request: the outbox
 * acknowledges a key again only for the request it first stored.
 */
export function assertSameRequest(
  held: unknown,
  given: StoredMessage,
  ids: { readonly key: string; readonly id: string },
  codec: OutboxBodyCodec | undefined,
): void {
  // Data under the id that is no message (written by something else than enqueue): not this request.
  if (typeof held !== 'object' || held === null || Array.isArray(held))
    throw new PlatformOutboxKeyConflictError(ids.key, ids.id, ['stored data']);
  const stored = held as StoredMessage;
  const differs: string[] = [];
  if (stored.method !== given.method) differs.push('method');
  if (stored.path !== given.path) differs.push('path');
  if (headersOf(stored) !== headersOf(given)) differs.push('headers');
  // The given body as Redis would give it back: what JSON drops (undefined fields, functions) is no difference.
  const body = given.body === undefined ? undefined : (JSON.parse(JSON.stringify(given.body)) as unknown);
  if (bodyOf(stored, codec) !== canonical(body)) differs.push('body');
  if (differs.length > 0) throw new PlatformOutboxKeyConflictError(ids.key, ids.id, differs);
}
