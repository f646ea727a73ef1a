import type { CallRetryOptions } from './call-options.interface.js';
import { definedOnly, type ConfigReport } from './config.report.js';
import type { FlatPlatformAuthOptions } from './flat-options.interface.js';
import { optionDefault } from './options.table.js';

export type CallRetrySettings = Readonly<Required<CallRetryOptions>>;

export interface IdempotencyKeySettings {
  /** The header's name, in lower case. */
  readonly header: string;
  /** Upper case. */
  readonly methods: ReadonlySet<string>;
}

/** What calls to the platform's APIs follow: the retry policy, and the idempotency key when one is configured. */
export interface CallSettings {
  readonly callRetry: CallRetrySettings;
  readonly idempotencyKey?: IdempotencyKeySettings;
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
 * The retry policy of calls with the table's defaults, and the idempotency key's header and methods; problems go to
 * `report`. `check` is the table's check of one setting (the settings resolver's).
 */
export function resolveCallSettings(
  options: Pick<FlatPlatformAuthOptions, 'callRetry' | 'idempotencyKey'>,
  report: ConfigReport,
  check: (name: string, value: unknown) => unknown,
): CallSettings {
  const given = definedOnly(options.callRetry);
  const callRetry = Object.fromEntries(
    CALL_RETRY_NAMES.map((name) => [name, check(`callRetry.${name}`, given[name])]),
  ) as unknown as CallRetrySettings;
  if (options.idempotencyKey === undefined) return { callRetry };
  const header = options.idempotencyKey.header ?? optionDefault<string>('idempotencyKey.header');
  if (typeof header !== 'string' || !TOKEN.test(header) || header.toLowerCase() === 'authorization')
    report.problem('idempotencyKey.header', 'must be a header name (letters, digits and -), not Authorization');
  const methods: unknown = options.idempotencyKey.methods ?? optionDefault<string[]>('idempotencyKey.methods');
  const valid = Array.isArray(methods) && methods.every((m) => typeof m === 'string' && TOKEN.test(m));
  if (!valid) report.problem('idempotencyKey.methods', "must be a list of HTTP methods, such as ['POST', 'PATCH']");
  const upper = valid ? (methods as string[]).map((method) => method.toUpperCase()) : [];
  return { callRetry, idempotencyKey: { header: String(header).toLowerCase(), methods: new Set(upper) } };
}
