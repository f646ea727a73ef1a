import { isSecret, reveal } from '../util/secret.util.js';
import type { ConfigReport } from './config.report.js';
import type { FlatPlatformAuthOptions } from './flat-options.interface.js';
import { PLATFORM_AUTH_OPTIONS, internalName, type OptionTable } from './options.table.js';
import { REFUSED_PATHS, ownAt, ownOptions, setAt } from './own-options.util.js';

/**
 * The options of `table` under their names inside the resolvers, whichever shape the caller used: `key.privateKeyPath`
 * and its deprecated alias `privateKeyPath` both become `privateKeyPath`. Own properties only (see `ownOptions`),
 * with the text of every `Secret` (`platformAuthConfig` puts secrets into its namespace as `Secret`s). Into `report`:
 * an option set under both its names (a problem naming both), the exchange's `retry.maxTotalMs` at the top level (a
 * problem naming `exchange.retry`), a group that is no object, and one warning listing every deprecated name in use. From here on
 * the report names each setting as the caller did, so a message points at the line they wrote.
 */
export function flattenOptions(
  input: unknown,
  report: ConfigReport,
  table: OptionTable = PLATFORM_AUTH_OPTIONS,
): FlatPlatformAuthOptions {
  const options = ownOptions(input, table);
  const flat = Object.create(null) as Record<string, unknown>;
  const names: Record<string, string> = {};
  const deprecated: [alias: string, name: string][] = [];
  for (const [name, row] of Object.entries(table)) {
    const value = ownAt(options, name);
    const old = row.alias === undefined ? undefined : ownAt(options, row.alias);
    if (row.kind === 'object') {
      const group = typeof value === 'object' && value !== null && !Array.isArray(value);
      if (row.toggle) names[row.internal!] = name;
      // A group that also takes true or false is checked by its resolver, which names it and its variable.
      if (row.toggle && value !== undefined && !group) setAt(flat, row.internal!, value);
      else if (value !== undefined && !group)
        report.problem(name, `must be an object (its settings are the ${name}.* options)`);
      else if (value !== undefined && row.internal !== undefined && ownAt(flat, row.internal) === undefined)
        setAt(flat, row.internal, Object.create(null));
      continue;
    }
    const internal = internalName(name, row);
    names[internal] = old !== undefined && value === undefined ? row.alias! : name;
    // The current name's value goes on, so the one problem is not followed by others about a missing setting.
    if (value !== undefined && old !== undefined)
      report.problem(
        name,
        `is set together with ${row.alias}, its deprecated name: one setting, set it once (${name})`,
      );
    else if (old !== undefined) deprecated.push([row.alias!, name]);
    const given = value ?? old;
    if (given !== undefined) setAt(flat, internal, isSecret(given) ? reveal(given) : given);
  }
  for (const path of table === PLATFORM_AUTH_OPTIONS ? REFUSED_PATHS : []) {
    if (ownAt(options, path) === undefined) continue;
    const [group, name] = path.split('.');
    report.problem(
      group,
      `has ${name}, a setting of the token exchange's retry policy: set it as exchange.${path}; the top-level ${group} is the policy of calls to the platform's APIs`,
    );
  }
  report.useNames(names);
  if (deprecated.length > 0) {
    report.warn(
      deprecated.map(([alias]) => alias).join(', '),
      `deprecated option names, still read this release: use ${deprecated.map(([alias, name]) => `${name} for ${alias}`).join(', ')}`,
    );
  }
  return flat as unknown as FlatPlatformAuthOptions;
}
