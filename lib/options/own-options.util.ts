import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { MOVED_OPTIONS } from './options.moved.js';
import { PLATFORM_AUTH_OPTIONS, type OptionTable } from './options.table.js';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The value at `path` (`key.privateKeyPath`) through own properties only; `undefined` when any step is missing. */
export function ownAt(source: unknown, path: string): unknown {
  let current = source;
  for (const step of path.split('.')) {
    if (!isObject(current) || !Object.hasOwn(current, step)) return undefined;
    current = current[step];
  }
  return current;
}

/** Sets `path` in `target`, making objects without a prototype on the way; a non-object on the way is left alone. */
export function setAt(target: Record<string, unknown>, path: string, value: unknown): void {
  const steps = path.split('.');
  let current = target;
  for (const step of steps.slice(0, -1)) {
    if (current[step] === undefined) current[step] = Object.create(null);
    if (!isObject(current[step])) return;
    current = current[step];
  }
  current[steps.at(-1)!] = value;
}

/** Removes `path` from `target`, when every step to it is there. */
export function deleteAt(target: unknown, path: string): void {
  const steps = path.split('.');
  const parent = steps.length === 1 ? target : ownAt(target, steps.slice(0, -1).join('.'));
  if (isObject(parent)) delete parent[steps.at(-1)!];
}

/** A `TokenStore` given as `tokenStore` itself, rather than the group: read as `{ instance }`. */
function isStoreInstance(value: unknown): boolean {
  return isObject(value) && typeof value.get === 'function' && typeof value.setIfNewer === 'function';
}

/**
 * The options as the caller set them: own properties only, at every name of `table`, copied into objects of the module's own (with no prototype). Options parsed from JSON with a `__proto__` key, or a
 * polluted `Object.prototype`, would otherwise lend inherited values (an extra allowed origin, say) to settings the
 * caller never set. Instances (a signer, a store, a clock) are kept as they are.
 */
export function ownOptions(input: unknown, table: OptionTable = PLATFORM_AUTH_OPTIONS): PlatformAuthOptions {
  const copy = Object.create(null) as Record<string, unknown>;
  if (!isObject(input)) return copy as unknown as PlatformAuthOptions;
  const store = ownAt(input, 'tokenStore');
  const source = isStoreInstance(store) ? { ...input, tokenStore: { instance: store } } : input;
  for (const [name, row] of Object.entries(table)) {
    const value = ownAt(source, name);
    if (value === undefined) continue;
    // A group is copied through its members, and kept when given empty: `idempotencyKey: {}` turns keys on, and
    // `rateLimit: {}` must fail for its missing rate. A value that is no group is kept, for start-up to refuse.
    if (row.kind === 'object' && isObject(value) && !Array.isArray(value)) setAt(copy, name, Object.create(null));
    else setAt(copy, name, row.kind === 'list' && Array.isArray(value) ? ownItems(value) : value);
  }
  // A name of an earlier shape is marked, so start-up can say where its setting went; its value (a key, a password)
  // is never copied.
  for (const [old, now] of Object.entries(MOVED_OPTIONS)) {
    if (Object.hasOwn(table, now) && ownAt(input, old) !== undefined) setAt(copy, old, true);
  }
  return copy as unknown as PlatformAuthOptions;
}

function ownItems(list: unknown[]): unknown[] {
  return Array.from({ length: list.length }, (_, i) => ownAt(list, String(i)));
}

/** Drops the secrets and the PEM text from options the module owns (see `ownOptions`) once start-up has used them. */
export function forgetCredentialText(options: object, table: OptionTable = PLATFORM_AUTH_OPTIONS): void {
  for (const [name, row] of Object.entries(table)) {
    if (row.secret !== true && row.kind !== 'pem') continue;
    deleteAt(options, name);
  }
}
