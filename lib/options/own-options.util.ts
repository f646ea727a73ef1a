import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { PLATFORM_AUTH_OPTIONS, type OptionTable } from './options.table.js';

/**
 * Settings no option takes, copied so that start-up can say where they went: the exchange's `retry.maxTotalMs`,
 * written at the top level as in earlier releases, where `retry` is now the policy of calls to the platform's APIs.
 */
export const REFUSED_PATHS = ['retry.maxTotalMs'];

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

function deleteAt(target: unknown, path: string): void {
  const steps = path.split('.');
  const parent = steps.length === 1 ? target : ownAt(target, steps.slice(0, -1).join('.'));
  if (isObject(parent)) delete parent[steps.at(-1)!];
}

/** A `TokenStore` given as `tokenStore` itself, rather than the group: read as `{ instance }`. */
function isStoreInstance(value: unknown): boolean {
  return isObject(value) && typeof value.get === 'function' && typeof value.setIfNewer === 'function';
}

/**
 * The options as the caller set them: own properties only, at every name of `table` and every deprecated alias,
 * copied into objects of the module's own (with no prototype). Options parsed from JSON with a `__proto__` key, or a
 * polluted `Object.prototype`, would otherwise lend inherited values (an extra allowed origin, say) to settings the
 * caller never set. Instances (a signer, a store, a clock) are kept as they are.
 */
export function ownOptions(input: unknown, table: OptionTable = PLATFORM_AUTH_OPTIONS): PlatformAuthOptions {
  const copy = Object.create(null) as Record<string, unknown>;
  if (!isObject(input)) return copy as unknown as PlatformAuthOptions;
  const store = ownAt(input, 'tokenStore');
  const source = isStoreInstance(store) ? { ...input, tokenStore: { instance: store } } : input;
  for (const [name, row] of Object.entries(table)) {
    for (const path of row.alias === undefined ? [name] : [name, row.alias]) {
      const value = ownAt(source, path);
      // A group is copied through its members; only a value that is no group is kept, for start-up to refuse. A
      // group with a name inside the resolvers is a setting in itself (`idempotencyKey: {}` turns keys on).
      if (row.kind === 'object' && isObject(value) && !Array.isArray(value)) {
        if (row.internal !== undefined && ownAt(copy, path) === undefined) setAt(copy, path, Object.create(null));
        continue;
      }
      if (value === undefined) continue;
      setAt(copy, path, row.kind === 'list' && Array.isArray(value) ? ownItems(value) : value);
    }
  }
  for (const path of REFUSED_PATHS) {
    const value = ownAt(input, path);
    if (value !== undefined) setAt(copy, path, value);
  }
  return copy as unknown as PlatformAuthOptions;
}

function ownItems(list: unknown[]): unknown[] {
  return Array.from({ length: list.length }, (_, i) => ownAt(list, String(i)));
}

/**
 * Drops the secrets and the PEM text from options the module owns (see `ownOptions`), under their names and their
 * deprecated aliases, once start-up has used them.
 */
export function forgetCredentialText(options: object, table: OptionTable = PLATFORM_AUTH_OPTIONS): void {
  for (const [name, row] of Object.entries(table)) {
    if (row.secret !== true && row.kind !== 'pem') continue;
    deleteAt(options, name);
    if (row.alias !== undefined) deleteAt(options, row.alias);
  }
}
