import type { CallRetryOptions, IdempotencyKeyOptions } from './call-options.interface.js';
import type { ExchangeOptions, RetryOptions } from './exchange-options.interface.js';
import type { KeySource } from './key-source.interface.js';
import type { RateLimitOptions } from './rate-limit-options.interface.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import type { TokenStoreOptions } from './token-store-options.interface.js';
import { CALL_ROWS } from './options.table.calls.js';
import { EXCHANGE_ROWS } from './options.table.exchange.js';
import { KEY_ROWS } from './options.table.key.js';
import { ASSERTION_ROWS, PLATFORM_ROWS, RUNTIME_ROWS } from './options.table.platform.js';
import { RATE_LIMIT_ROWS } from './options.table.rate-limit.js';
import { STORE_ROWS } from './options.table.store.js';
import type { OptionRow, OptionTable } from './options.table.types.js';

export type { OptionKind, OptionRow, OptionTable } from './options.table.types.js';

/** Every option of `PlatformAuthOptions` in its current shape, dotted below its group. */
type OptionPath =
  | keyof PlatformAuthOptions
  | `key.${keyof KeySource}`
  | `next.${keyof KeySource}`
  | `exchange.${keyof ExchangeOptions}`
  | `exchange.retry.${keyof RetryOptions}`
  | `tokenStore.${keyof TokenStoreOptions}`
  | `tokenStore.sentinel.${keyof NonNullable<TokenStoreOptions['sentinel']>}`
  | `tokenStore.tls.${keyof NonNullable<TokenStoreOptions['tls']>}`
  | `retry.${keyof CallRetryOptions}`
  | `idempotencyKey.${keyof IdempotencyKeyOptions}`
  | `rateLimit.${keyof RateLimitOptions}`;

/**
 * Every option of machine authentication in one place (user sign-in's are in `options.table.user.ts`, in the same
 * form): the resolvers take defaults and simple checks from here, `platformAuthConfig` the variables and how to parse
 * them, `ownOptions` the names, and docs/configuration.md's table is
 * written from it and checked by a test. The compiler fails here when an option is added to the interfaces but not
 * to the table.
 */
export const PLATFORM_AUTH_OPTIONS = {
  ...PLATFORM_ROWS,
  ...KEY_ROWS,
  ...ASSERTION_ROWS,
  ...EXCHANGE_ROWS,
  ...STORE_ROWS,
  ...CALL_ROWS,
  ...RATE_LIMIT_ROWS,
  ...RUNTIME_ROWS,
} as const satisfies Record<OptionPath, OptionRow>;

export type OptionName = keyof typeof PLATFORM_AUTH_OPTIONS;

/** Option → environment variable, for every option of `table` the environment can fill: how a report names a setting. */
export function tableEnv(table: OptionTable): Readonly<Record<string, string>> {
  return Object.fromEntries(
    Object.entries(table).flatMap(([name, row]) => (row.env === undefined ? [] : [[name, row.env]])),
  );
}

/** Option → environment variable, for every option the environment can fill. */
export const PLATFORM_AUTH_ENV: Readonly<Record<string, string>> = tableEnv(PLATFORM_AUTH_OPTIONS);

/** The row of an option (`exchange.retry.maxAttempts`). */
export function optionRow(name: string): OptionRow {
  return (PLATFORM_AUTH_OPTIONS as OptionTable)[name];
}

/** The default of an option (typed by the caller, who knows the option's type). */
export function optionDefault<T>(name: OptionName): T {
  return optionRow(name).default as T;
}

/** One row of the configuration page's options table: option, variable, default, rule. */
export function optionTableCells(
  name: string,
  table: OptionTable = PLATFORM_AUTH_OPTIONS,
): [string, string, string, string] {
  const row = table[name];
  const shown = row.default === undefined ? '—' : describeDefault(row.default);
  const rule = [row.rule, row.secret ? 'secret: never printed' : ''].filter(Boolean).join('; ');
  return [`\`${name}\``, row.env === undefined ? '—' : `\`${row.env}\``, shown, rule];
}

function describeDefault(value: unknown): string {
  if (typeof value === 'number') return value.toLocaleString('en-US');
  return `\`${String(value)}\``;
}
