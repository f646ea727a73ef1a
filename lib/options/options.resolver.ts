import {
  DEFAULT_ASSERTION_LIFETIME_SECONDS,
  DEFAULT_EXCHANGE_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_REFRESH_BEFORE_EXPIRY_SECONDS,
  DEFAULT_TOKEN_PATH,
  DEFAULT_CLOCK_MARGIN_SECONDS,
  MAX_ASSERTION_LIFETIME_SECONDS,
  MAX_CLOCK_MARGIN_SECONDS,
  MIN_CREDENTIALS_RELOAD_INTERVAL_MS,
} from './options.constants.js';
import type { ConfigProblem } from '../platform-auth.errors.js';
import type { PlatformAuthOptions, RetryOptions } from './platform-auth-options.interface.js';
import { ConfigReport, definedOnly, quotable } from './config.report.js';
import { loadCredentials, type CredentialSources, type LoadedCredentials } from '../credentials/credentials.loader.js';
import { ownOptions } from './own-options.util.js';
import { resolveTokenStoreOptions, type ResolvedTokenStoreConfig } from '../store/token-store.options.js';

/** The options after validation, with defaults applied and credentials parsed. Built once per module instance. */
export interface ResolvedPlatformAuthConfig {
  /** Without a trailing slash. */
  readonly baseUrl: string;
  readonly origin: string;
  readonly tokenUrl: string;
  readonly machineId: string;
  readonly audience: string;
  readonly credentials: LoadedCredentials;
  /** Where the credentials came from, for re-reading `*_PATH` files. */
  readonly credentialSources: CredentialSources;
  /** How often `*_PATH` files are re-read; undefined: never. */
  readonly credentialsReloadIntervalMs?: number;
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
  /** The shared token store; absent when none is configured. */
  readonly tokenStore?: ResolvedTokenStoreConfig;
  readonly warnings: readonly ConfigProblem[];
}

const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxTotalMs: 30_000,
};
const DEFAULT_FAILURE_BACKOFF_MS = 1_000;

/**
 * The one base URL rule, worded once for start-up, the CLI and the docs: the base URL is the platform's origin, and
 * the token endpoint lies at `tokenPath` below it. A path would be silently dropped by some clients and kept by
 * others, and the exchange would fail only at the first request with a 404.
 */
export function baseUrlPathProblem(url: URL): string {
  return `has the path '${url.pathname}'; remove the path: the base URL is https://{platform_domain} only, and the token endpoint is found at tokenPath below it (${url.origin}${DEFAULT_TOKEN_PATH})`;
}

/** `localhost`, 127.0.0.0/8 and `::1`: the only hosts where plain `http:` is accepted. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Validates every option and loads the credentials. Throws one `PlatformAuthConfigError` listing all problems.
 * `nowMs` is the injected clock's time, used for certificate validity.
 */
export function resolvePlatformAuthOptions(
  input: PlatformAuthOptions,
  nowMs: number,
  integration?: string,
): ResolvedPlatformAuthConfig {
  const options = ownOptions(input);
  const report = new ConfigReport(integration);
  refusePemText(options, report);
  const base = parseHttpUrl(options.baseUrl, 'baseUrl', report, true);
  if (!nonEmpty(options.machineId))
    report.problem('machineId', 'is required (the machineId shown in the portal; it becomes sub)');
  else if (!looksLikePem(options.machineId)) requireOneLine(options.machineId, 'machineId', report);

  const assertionLifetimeSeconds = options.assertionLifetimeSeconds ?? DEFAULT_ASSERTION_LIFETIME_SECONDS;
  if (!Number.isInteger(assertionLifetimeSeconds) || assertionLifetimeSeconds < 1) {
    report.problem('assertionLifetimeSeconds', 'must be a whole number of seconds, at least 1');
  } else if (assertionLifetimeSeconds > MAX_ASSERTION_LIFETIME_SECONDS) {
    report.problem(
      'assertionLifetimeSeconds',
      `is ${assertionLifetimeSeconds}; the platform accepts at most ${MAX_ASSERTION_LIFETIME_SECONDS} seconds`,
    );
  }
  const refreshBeforeExpirySeconds = options.refreshBeforeExpirySeconds ?? DEFAULT_REFRESH_BEFORE_EXPIRY_SECONDS;
  requireNumber(refreshBeforeExpirySeconds, 'refreshBeforeExpirySeconds', 0, report);

  const tokenPath = options.tokenPath ?? DEFAULT_TOKEN_PATH;
  if (!tokenPath.startsWith('/') || tokenPath.startsWith('//'))
    report.problem('tokenPath', "must be a path starting with '/'");

  const tokenEncoding = options.tokenEncoding ?? 'jwt';
  if (tokenEncoding !== 'jwt' && tokenEncoding !== 'base64')
    report.problem('tokenEncoding', "must be 'jwt' or 'base64'");

  const allowedOrigins = new Set<string>();
  if (base) allowedOrigins.add(base.origin);
  if (options.allowedOrigins !== undefined && !Array.isArray(options.allowedOrigins))
    report.problem('allowedOrigins', 'must be a list of origins (in the environment: comma-separated)');
  for (const origin of Array.isArray(options.allowedOrigins) ? options.allowedOrigins : []) {
    const url = parseHttpUrl(origin, 'allowedOrigins', report, false);
    if (url) allowedOrigins.add(url.origin);
  }

  const exchangeTimeoutMs = options.exchangeTimeoutMs ?? DEFAULT_EXCHANGE_TIMEOUT_MS;
  requireNumber(exchangeTimeoutMs, 'exchangeTimeoutMs', 1, report);
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  requireNumber(maxResponseBytes, 'maxResponseBytes', 256, report);
  const failureBackoffMs = options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF_MS;
  requireNumber(failureBackoffMs, 'failureBackoffMs', 0, report);
  const retry = { ...DEFAULT_RETRY, ...definedOnly(options.retry) };
  requireNumber(retry.maxAttempts, 'retry.maxAttempts', 1, report);
  requireNumber(retry.baseDelayMs, 'retry.baseDelayMs', 0, report);
  requireNumber(retry.maxDelayMs, 'retry.maxDelayMs', 0, report);
  requireNumber(retry.maxTotalMs, 'retry.maxTotalMs', 0, report);

  const correctClockSkew = options.correctClockSkew ?? false;
  if (typeof correctClockSkew !== 'boolean')
    report.problem('correctClockSkew', mustBe('true or false', correctClockSkew));
  const clockMarginSeconds = options.clockMarginSeconds ?? DEFAULT_CLOCK_MARGIN_SECONDS;
  if (
    typeof clockMarginSeconds !== 'number' ||
    !(clockMarginSeconds >= 0 && clockMarginSeconds <= MAX_CLOCK_MARGIN_SECONDS)
  )
    report.problem(
      'clockMarginSeconds',
      mustBe(`a number of seconds from 0 to ${MAX_CLOCK_MARGIN_SECONDS}`, clockMarginSeconds),
    );
  const startupCheck = options.startupCheck ?? 'off';
  if (startupCheck !== 'off' && startupCheck !== 'warn' && startupCheck !== 'fail')
    report.problem('startupCheck', mustBe("'off', 'warn' or 'fail'", startupCheck));

  const credentials = loadCredentials(options, nowMs, report);
  const credentialsReloadIntervalMs = options.credentialsReloadIntervalMs;
  if (credentialsReloadIntervalMs !== undefined) {
    requireNumber(
      credentialsReloadIntervalMs,
      'credentialsReloadIntervalMs',
      MIN_CREDENTIALS_RELOAD_INTERVAL_MS,
      report,
    );
    if (options.privateKeyPath === undefined && options.certificatePath === undefined) {
      report.warn('credentialsReloadIntervalMs', 'is set but no *_PATH file is configured; nothing is re-read');
    }
  }
  const audience = options.audience ?? base?.host;
  if (options.audience !== undefined && !nonEmpty(options.audience)) report.problem('audience', 'is empty');
  else if (options.audience !== undefined && !looksLikePem(options.audience))
    requireOneLine(options.audience, 'audience', report);
  const tokenStore = resolveTokenStoreOptions(options, report);

  report.throwIfProblems();
  return {
    baseUrl: base!.href.replace(/\/+$/, ''),
    origin: base!.origin,
    tokenUrl: base!.href.replace(/\/+$/, '') + tokenPath,
    machineId: options.machineId,
    audience: audience!,
    credentials: credentials!,
    credentialSources: pickCredentialSources(options, credentialsReloadIntervalMs !== undefined),
    credentialsReloadIntervalMs,
    tokenEncoding,
    refreshBeforeExpirySeconds,
    assertionLifetimeSeconds,
    allowedOrigins,
    exchangeTimeoutMs,
    maxResponseBytes,
    retry,
    failureBackoffMs,
    correctClockSkew,
    clockMarginSeconds,
    startupCheck,
    tokenStore,
    warnings: report.warnings,
  };
}

/**
 * The sources the reloader reads again. Key text, certificate text and the passphrase are kept only when reloading is
 * on (it needs them to load a re-read file); otherwise nothing in the container holds them after start-up.
 */
function pickCredentialSources(options: PlatformAuthOptions, forReloading: boolean): CredentialSources {
  const { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm } = options;
  if (!forReloading) return { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm };
  const { privateKey, privateKeyPassphrase, certificate } = options;
  return {
    privateKey,
    privateKeyPath,
    privateKeyPassphrase,
    certificate,
    certificatePath,
    thumbprint,
    thumbprintAlgorithm,
  };
}

/** Settings that hold key or certificate text, or a secret, and are checked as such by the credentials loader. */
const CREDENTIAL_SETTINGS = new Set([
  'privateKey',
  'privateKeyPassphrase',
  'certificate',
  'privateKeyPath',
  'certificatePath',
]);

function looksLikePem(value: string): boolean {
  return /-----(BEGIN|END) /.test(value);
}

/**
 * A key pasted into machineId or audience would be sent to the platform as sub or aud and printed by the CLI: PEM
 * text is refused in every setting that is not meant for it, and never repeated.
 */
function refusePemText(options: PlatformAuthOptions, report: ConfigReport): void {
  for (const [option, value] of Object.entries(options)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (CREDENTIAL_SETTINGS.has(option) || !values.some((v) => typeof v === 'string' && looksLikePem(v))) continue;
    report.problem(
      option,
      'holds PEM text (a key or certificate), which belongs in privateKey or certificate; the value is not shown',
    );
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

function requireNumber(value: unknown, option: string, min: number, report: ConfigReport): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    report.problem(option, mustBe(`a finite number, at least ${min}`, value));
  }
}

/** `must be …`, quoting the value when it is short plain text (a variable's value, typically). */
function mustBe(expected: string, value: unknown): string {
  const shown = typeof value === 'string' ? quotable(value) : undefined;
  return `must be ${expected}${shown === undefined ? '' : `, got '${shown}'`}`;
}

export function parseHttpUrl(value: unknown, option: string, report: ConfigReport, isBase: boolean): URL | undefined {
  if (!nonEmpty(value)) {
    report.problem(option, isBase ? 'is required (https://{platform_domain})' : 'contains an empty entry');
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    const shown = quotable(value);
    report.problem(option, shown === undefined ? 'is not an absolute URL' : `'${shown}' is not an absolute URL`);
    return undefined;
  }
  if (url.username || url.password) {
    report.problem(option, 'must not contain credentials (user:password@)');
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    report.problem(option, `uses ${url.protocol}; only https: is accepted`);
    return undefined;
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    report.problem(
      option,
      `'${url.origin}' uses http: off loopback; the token and assertion would travel in clear text, use https:`,
    );
    return undefined;
  }
  if (isBase && (url.search || url.hash)) {
    report.problem(option, 'must not contain a query or fragment');
    return undefined;
  }
  if (isBase && url.pathname !== '/') {
    report.problem(option, baseUrlPathProblem(url));
    return undefined;
  }
  return url;
}
