import type { CallRetryOptions, IdempotencyKeyOptions } from './call-options.interface.js';
import { definedOnly, quotable, type ConfigReport } from './config.report.js';
import type { ReadPlatformAuthOptions } from './options.read.js';
import { optionDefault } from './options.table.js';

export type CallRetrySettings = Readonly<Required<CallRetryOptions>>;

export interface IdempotencyKeySettings {
  /** The header's name, in lower case: the key the library adds goes there, and a caller's own key is found there. */
  readonly header: string;
  /** Methods that get a key from the library, upper case; none when `idempotencyKey` is off. */
  readonly methods: ReadonlySet<string>;
}

/** What calls to the platform's APIs follow: the retry policy, and the idempotency key's header and methods. */
export interface CallSettings {
  readonly callRetry: CallRetrySettings;
  readonly idempotencyKey: IdempotencyKeySettings;
}

const CALL_RETRY_NAMES = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'budgetPercent',
  'budgetMinPerMinute',
] as const satisfies readonly (keyof CallRetryOptions)[];

/** RFC 9110 `token`: what a header name and a method are made of. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The retry policy of calls with the table's defaults (`retry: false`: one send per call), and the idempotency key's
 * header and methods (none unless `idempotencyKey` is on); problems go to `report`. `check` is the table's check of
 * one setting (the settings resolver's).
 */
export function resolveCallSettings(
  options: Pick<ReadPlatformAuthOptions, 'retry' | 'idempotencyKey'>,
  report: ConfigReport,
  check: (name: string, value: unknown) => unknown,
): CallSettings {
  const retry = groupOrSwitch<CallRetryOptions>(options.retry, 'retry', report);
  const given = retry === false ? { maxAttempts: 1 } : retry;
  const callRetry = Object.fromEntries(
    CALL_RETRY_NAMES.map((name) => [name, check(`retry.${name}`, given[name])]),
  ) as unknown as CallRetrySettings;
  const keys = groupOrSwitch<IdempotencyKeyOptions>(options.idempotencyKey, 'idempotencyKey', report, false);
  const header = (keys === false ? undefined : keys.header) ?? optionDefault<string>('idempotencyKey.header');
  if (typeof header !== 'string' || !TOKEN.test(header) || header.toLowerCase() === 'authorization')
    report.problem('idempotencyKey.header', 'must be a header name (letters, digits and -), not Authorization');
  if (keys === false)
    return { callRetry, idempotencyKey: { header: String(header).toLowerCase(), methods: new Set() } };
  const methods: unknown = keys.methods ?? optionDefault<string[]>('idempotencyKey.methods');
  const valid = Array.isArray(methods) && methods.every((m) => typeof m === 'string' && TOKEN.test(m));
  if (!valid) report.problem('idempotencyKey.methods', "must be a list of HTTP methods, such as ['POST', 'PATCH']");
  const upper = valid ? (methods as string[]).map((method) => method.toUpperCase()) : [];
  return { callRetry, idempotencyKey: { header: String(header).toLowerCase(), methods: new Set(upper) } };
}

/**
 * A group that also takes `true` (its defaults) and `false` (off): its settings given, or `false`; `unset` is what
 * leaving it out means. Anything else is reported, quoted when it is plain text (a variable's value).
 */
function groupOrSwitch<T extends object>(
  value: T | boolean | undefined,
  option: string,
  report: ConfigReport,
  unset: false | Partial<T> = {},
): Partial<T> | false {
  if (value === undefined) return unset;
  if (typeof value === 'boolean') return value ? {} : false;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return definedOnly(value);
  const shown = typeof value === 'string' ? quotable(value) : undefined;
  report.problem(
    option,
    `must be true, false or an object of its settings${shown === undefined ? '' : `, got '${shown}'`}`,
  );
  return unset;
}
