import { isSecret, reveal } from '../util/secret.util.js';
import type { ConfigReport } from './config.report.js';
import { MOVED_OPTIONS } from './options.moved.js';
import { PLATFORM_AUTH_OPTIONS, type OptionTable } from './options.table.js';
import { deleteAt, ownAt, ownOptions, setAt } from './own-options.util.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import type { TokenStoreOptions } from './token-store-options.interface.js';

/** The options as the resolvers read them: a `TokenStore` given as `tokenStore` is there as `tokenStore.instance`. */
export interface ReadPlatformAuthOptions extends Omit<PlatformAuthOptions, 'tokenStore'> {
  tokenStore?: TokenStoreOptions;
}

/**
 * The options of `table` as the resolvers read them: own properties only (see `ownOptions`), with the text of every
 * `Secret` (`platformAuthConfig` puts secrets into its namespace as `Secret`s). Into `report`: each name of an
 * earlier shape in use, naming the option that holds its setting now (`MOVED_OPTIONS`), and a group that is no
 * object, which is dropped. A group that also takes `true` or `false` is checked by its resolver, which names it and
 * its variable.
 */
export function readOptions<T = ReadPlatformAuthOptions>(
  input: unknown,
  report: ConfigReport,
  table: OptionTable = PLATFORM_AUTH_OPTIONS,
): T {
  const options = ownOptions(input, table) as unknown as Record<string, unknown>;
  for (const [old, now] of Object.entries(MOVED_OPTIONS)) {
    if (Object.hasOwn(table, now) && ownAt(options, old) !== undefined) report.problem(old, `moved to ${now}`);
  }
  for (const [name, row] of Object.entries(table)) {
    const value = ownAt(options, name);
    if (value === undefined) continue;
    const group = typeof value === 'object' && value !== null && !Array.isArray(value);
    if (row.kind === 'object' && !group && row.toggle !== true) {
      report.problem(name, `must be an object (its settings are the ${name}.* options)`);
      deleteAt(options, name);
    } else if (isSecret(value)) setAt(options, name, reveal(value));
  }
  return options as T;
}
