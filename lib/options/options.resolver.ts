import { resolveCallSettings, type CallSettings } from './calls.resolver.js';
import type { RetryOptions } from './exchange-options.interface.js';
import { definedOnly, quotable, type ConfigReport } from './config.report.js';
import type { ReadPlatformAuthOptions } from './options.read.js';
import { PLATFORM_AUTH_OPTIONS, optionDefault, optionRow, type OptionName } from './options.table.js';
import { ownAt } from './own-options.util.js';
import { parseHttpUrl } from './url.rules.js';

/**
 * The options that shape token acquisition, validated and with defaults applied. Credentials and the shared store
 * are resolved by their own layers; the composition root puts the three together.
 */
export interface PlatformAuthSettings extends CallSettings {
  /** Without a trailing slash. */
  readonly baseUrl: string;
  readonly tokenUrl: string;
  readonly machineId: string;
  readonly audience: string;
  readonly tokenEncoding: 'jwt' | 'base64';
  readonly refreshBeforeExpirySeconds: number;
  readonly assertionLifetimeSeconds: number;
  /** Origins that may receive the token: `baseUrl`'s and `allowedOrigins`. */
  readonly allowedOrigins: ReadonlySet<string>;
  readonly exchangeTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly retry: Required<RetryOptions>;
  readonly failureBackoffMs: number;
  readonly correctClockSkew: boolean;
  readonly clockMarginSeconds: number;
  readonly startupCheck: 'off' | 'warn' | 'fail';
  /** How often `*_PATH` files are re-read; undefined: never. */
  readonly credentialsReloadIntervalMs?: number;
}

/** Settings whose type, bounds and default come from the option table alone, each with its option. */
const TABLE_CHECKED = {
  tokenEncoding: 'exchange.encoding',
  refreshBeforeExpirySeconds: 'refreshBeforeExpirySeconds',
  exchangeTimeoutMs: 'exchange.timeoutMs',
  maxResponseBytes: 'exchange.maxResponseBytes',
  failureBackoffMs: 'exchange.failureBackoffMs',
  correctClockSkew: 'correctClockSkew',
  startupCheck: 'startupCheck',
} as const satisfies Partial<Record<keyof PlatformAuthSettings, OptionName>>;

/** What the assertion's times depend on; `effectiveClockMargin` turns it into the offset the platform may have. */
type ClockSettings = Pick<PlatformAuthSettings, 'clockMarginSeconds' | 'assertionLifetimeSeconds'>;

/**
 * Validates the settings into `report` (every problem, not the first) and applies the table's defaults.
 * `undefined` when a setting has a problem. Credentials and the store are checked elsewhere, into the same report.
 */
export function resolveSettings(
  options: ReadPlatformAuthOptions,
  report: ConfigReport,
): PlatformAuthSettings | undefined {
  const problemsBefore = report.problems.length;
  refusePemText(options, report);
  const endpoint = resolveEndpoint(options, report);
  const base = endpoint?.base;
  checkMachineId(options.machineId, report);

  const table = Object.fromEntries(
    Object.entries(TABLE_CHECKED).map(([setting, name]) => [setting, checked(name, ownAt(options, name), report)]),
  ) as Pick<PlatformAuthSettings, keyof typeof TABLE_CHECKED>;

  const clock = resolveClockSettings(options, report);

  const allowedOrigins = new Set<string>();
  if (base) allowedOrigins.add(base.origin);
  if (options.allowedOrigins !== undefined && !Array.isArray(options.allowedOrigins))
    report.problem('allowedOrigins', 'must be a list of origins (in the environment: comma-separated)');
  for (const origin of Array.isArray(options.allowedOrigins) ? options.allowedOrigins : []) {
    const url = parseHttpUrl(origin, 'allowedOrigins', report, false);
    if (url) allowedOrigins.add(url.origin);
  }

  const retry = { ...retryDefaults(), ...definedOnly(options.exchange?.retry) };
  for (const name of RETRY_NAMES) checked(`exchange.retry.${name}`, retry[name], report);
  const calls = resolveCallSettings(options, report, (name, value) => checked(name, value, report));

  const credentialsReloadIntervalMs = options.credentialsReloadIntervalMs;
  if (credentialsReloadIntervalMs !== undefined) {
    checked('credentialsReloadIntervalMs', credentialsReloadIntervalMs, report);
    const paths = [
      options.key?.privateKeyPath,
      options.key?.certificatePath,
      options.next?.privateKeyPath,
      options.next?.certificatePath,
    ];
    if (paths.every((path) => path === undefined)) {
      report.warn('credentialsReloadIntervalMs', 'is set but no *_PATH file is configured; nothing is re-read');
    }
  }
  const audience = options.audience ?? base?.host;
  if (options.audience !== undefined && !nonEmpty(options.audience)) report.problem('audience', 'is empty');
  else if (options.audience !== undefined && !looksLikePem(options.audience))
    requireOneLine(options.audience, 'audience', report);

  if (report.problems.length > problemsBefore) return undefined;
  return {
    ...table,
    ...clock!,
    baseUrl: endpoint!.baseUrl,
    tokenUrl: endpoint!.tokenUrl,
    machineId: options.machineId,
    audience: audience!,
    allowedOrigins,
    retry,
    ...calls,
    credentialsReloadIntervalMs,
  };
}

/**
 * The base URL (without trailing slashes) and the token endpoint below it, at `exchange.path`: the one place the token
 * URL is built, for start-up and for `doctor`, which probes it even when other settings fail. Undefined, with the
 * problems in `report`, when either option is unusable.
 */
export function resolveEndpoint(
  options: Pick<ReadPlatformAuthOptions, 'baseUrl' | 'exchange'>,
  report: ConfigReport,
): { readonly base: URL; readonly baseUrl: string; readonly tokenUrl: string } | undefined {
  const base = parseHttpUrl(options.baseUrl, 'baseUrl', report, true);
  const tokenPath = options.exchange?.path ?? optionDefault<string>('exchange.path');
  const usablePath = typeof tokenPath === 'string' && tokenPath.startsWith('/') && !tokenPath.startsWith('//');
  if (!usablePath) report.problem('exchange.path', "must be a path starting with '/'");
  if (!base || !usablePath) return undefined;
  const baseUrl = base.href.replace(/\/+$/, '');
  return { base, baseUrl, tokenUrl: baseUrl + tokenPath };
}

/**
 * The clock margin and the assertion's lifetime, with the table's defaults: start-up's, and `doctor`'s even when other
 * settings fail, so both tolerate the same clock offset. Undefined, with the problems in `report`, when unusable.
 */
export function resolveClockSettings(
  options: Pick<ReadPlatformAuthOptions, 'clockMarginSeconds' | 'assertionLifetimeSeconds'>,
  report: ConfigReport,
): ClockSettings | undefined {
  const problemsBefore = report.problems.length;
  const clockMarginSeconds = checked('clockMarginSeconds', options.clockMarginSeconds, report) as number;
  const assertionLifetimeSeconds =
    options.assertionLifetimeSeconds ?? optionDefault<number>('assertionLifetimeSeconds');
  const maxLifetime: number = PLATFORM_AUTH_OPTIONS.assertionLifetimeSeconds.max;
  if (!Number.isInteger(assertionLifetimeSeconds) || assertionLifetimeSeconds < 1) {
    report.problem('assertionLifetimeSeconds', 'must be a whole number of seconds, at least 1');
  } else if (assertionLifetimeSeconds > maxLifetime) {
    report.problem(
      'assertionLifetimeSeconds',
      `is ${assertionLifetimeSeconds}; the platform accepts at most ${maxLifetime} seconds`,
    );
  }
  return report.problems.length > problemsBefore ? undefined : { clockMarginSeconds, assertionLifetimeSeconds };
}

/**
 * The machineId rule, for start-up and for a rotation alike: present, one line, no PEM text (a key pasted here would
 * be signed into `sub` and sent to the platform). The value is never quoted.
 */
export function checkMachineId(machineId: unknown, report: ConfigReport): void {
  if (!nonEmpty(machineId))
    report.problem('machineId', 'is required (the machineId shown in the portal; it becomes sub)');
  else if (looksLikePem(machineId)) report.problem('machineId', PEM_TEXT_PROBLEM);
  else requireOneLine(machineId, 'machineId', report);
}

const RETRY_NAMES = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'maxTotalMs',
] as const satisfies readonly (keyof RetryOptions)[];

function retryDefaults(): Required<RetryOptions> {
  return Object.fromEntries(
    RETRY_NAMES.map((name) => [name, optionDefault<number>(`exchange.retry.${name}`)]),
  ) as unknown as Required<RetryOptions>;
}

/** The value, or the table's default when unset; a value of the wrong type or out of bounds is reported. */
function checked(name: string, value: unknown, report: ConfigReport): unknown {
  const row = optionRow(name);
  const actual = value ?? row.default;
  if (actual === undefined) return undefined;
  switch (row.kind) {
    case 'number': {
      const { min = 0, max } = row;
      const unit = name.endsWith('Seconds') ? ' of seconds' : name.endsWith('Ms') ? ' of milliseconds' : '';
      const inRange = typeof actual === 'number' && Number.isFinite(actual) && actual >= min;
      if (max === undefined && !inRange) report.problem(name, mustBe(`a finite number, at least ${min}`, actual));
      else if (max !== undefined && !(inRange && actual <= max))
        report.problem(name, mustBe(`a number${unit} from ${min} to ${max}`, actual));
      break;
    }
    case 'boolean':
      if (typeof actual !== 'boolean') report.problem(name, mustBe('true or false', actual));
      break;
    case 'enum': {
      const values = row.values ?? [];
      if (!values.includes(actual as string)) {
        const listed = values.map((v) => `'${v}'`);
        report.problem(name, mustBe(`${listed.slice(0, -1).join(', ')} or ${listed.at(-1)}`, actual));
      }
      break;
    }
  }
  return actual;
}

/** The groups whose settings hold key or certificate text, or a secret, checked as such by the credentials loader. */
const CREDENTIAL_GROUPS = /^(key|next)\./;

const PEM_TEXT_PROBLEM =
  'holds PEM text (a key or certificate), which belongs in key.privateKey or key.certificate; the value is not shown';

function looksLikePem(value: string): boolean {
  return /-----(BEGIN|END) /.test(value);
}

/**
 * A key pasted into machineId or audience would be sent to the platform as sub or aud and printed by the CLI: PEM
 * text is refused in every setting that is not meant for it, and never repeated.
 */
function refusePemText(options: ReadPlatformAuthOptions, report: ConfigReport): void {
  for (const option of Object.keys(PLATFORM_AUTH_OPTIONS)) {
    if (option === 'machineId' || CREDENTIAL_GROUPS.test(option)) continue;
    const value = ownAt(options, option);
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'string' && looksLikePem(v))) report.problem(option, PEM_TEXT_PROBLEM);
  }
}

function requireOneLine(value: string, option: string, report: ConfigReport): void {
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\u0000-\u001f\u007f]|\\n/.test(value))
    report.problem(option, 'must be one line of text; the value is not shown');
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** `must be …`, quoting the value when it is short plain text (a variable's value, typically). */
function mustBe(expected: string, value: unknown): string {
  const shown = typeof value === 'string' ? quotable(value) : undefined;
  return `must be ${expected}${shown === undefined ? '' : `, got '${shown}'`}`;
}
