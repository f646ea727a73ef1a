import { PLATFORM_AUTH_OPTIONS, type OptionTable } from '../options/options.table.js';
import { isPlainObject } from '../util/plain-object.util.js';
import { isSecret, secretText } from '../util/secret.util.js';
import type { PlatformTenantsOptions } from './tenants.types.js';

/**
 * `forTenants` options as the module keeps them: every secret and PEM text of the shared settings (the store's URL,
 * password and encryption key, a shared key's text or passphrase) held as a `Secret`, which renders as `[secret]` in
 * any dump of the container and is read again each time a tenant is built. Groups on the way are copied, so the
 * caller's object is left as it was. Unlike `forRoot`'s options they cannot be dropped after start-up: every tenant
 * built later needs them.
 */
export function sealTenantsOptions(options: PlatformTenantsOptions): PlatformTenantsOptions {
  const sealed: Record<string, unknown> = { ...options };
  const table: OptionTable = PLATFORM_AUTH_OPTIONS;
  for (const [name, row] of Object.entries(table)) {
    if (row.secret !== true && row.kind !== 'pem') continue;
    sealAt(sealed, name.split('.'));
  }
  return sealed as unknown as PlatformTenantsOptions;
}

function sealAt(target: Record<string, unknown>, steps: readonly string[]): void {
  let current = target;
  for (const step of steps.slice(0, -1)) {
    const next = Object.hasOwn(current, step) ? current[step] : undefined;
    if (!isPlainObject(next)) return;
    current[step] = { ...next };
    current = current[step] as Record<string, unknown>;
  }
  const last = steps.at(-1)!;
  const value = Object.hasOwn(current, last) ? current[last] : undefined;
  if (typeof value === 'string' && !isSecret(value)) current[last] = secretText(value);
}
