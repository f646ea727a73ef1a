import { copyOwn } from '../options/own-options.util.js';
import { hkdfSync } from 'node:crypto';
import { ConfigReport } from '../options/config.report.js';
import { parseHttpUrl } from '../options/url.rules.js';
import {
  DEFAULT_AUTHORIZE_PATH,
  DEFAULT_SESSION_LIFETIME_SECONDS,
  DEFAULT_TRANSACTION_LIFETIME_SECONDS,
  DEFAULT_USER_REQUEST_TIMEOUT_MS,
  DEFAULT_USER_TOKEN_PATH,
  MAX_TRANSACTION_LIFETIME_SECONDS,
  MIN_STATE_SECRET_BYTES,
  PLATFORM_USER_AUTH_ENV,
} from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';

/** The options after validation, with defaults applied and keys derived. Built once per module instance. */
export interface ResolvedUserAuthConfig {
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly issuer: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope?: string;
  /** Encrypts transactions (A256GCM). */
  readonly transactionKey: Uint8Array;
  /** Encrypts sessions (A256GCM); a different key, so one can never be passed off as the other. */
  readonly sessionKey: Uint8Array;
  readonly transactionLifetimeSeconds: number;
  readonly sessionLifetimeSeconds: number;
  readonly requestTimeoutMs: number;
  readonly secureCookies: boolean;
}

/** RFC 6749 §3.3: scope tokens are printable ASCII without space, `"` or `\`. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/** Every option, so that the compiler fails here when one is added to the interface but not here. */
const USER_OPTION_NAMES = Object.keys({
  baseUrl: true,
  clientId: true,
  redirectUri: true,
  scope: true,
  stateSecret: true,
  authorizePath: true,
  tokenPath: true,
  issuer: true,
  transactionLifetimeSeconds: true,
  sessionLifetimeSeconds: true,
  requestTimeoutMs: true,
  secureCookies: true,
  clock: true,
} satisfies Record<keyof PlatformUserAuthOptions, true>);

/**
 * The options as the caller set them, own properties only: a polluted `Object.prototype` (`secureCookies: false`,
 * a `stateSecret` an attacker knows) must not fill settings the caller never set.
 */
export function ownUserOptions(input: unknown): PlatformUserAuthOptions {
  if (typeof input !== 'object' || input === null) return Object.create(null) as PlatformUserAuthOptions;
  return copyOwn(input, USER_OPTION_NAMES) as unknown as PlatformUserAuthOptions;
}

/** Validates every option; throws one `PlatformAuthConfigError` listing all problems. */
export function resolveUserAuthOptions(input: PlatformUserAuthOptions): ResolvedUserAuthConfig {
  const options = ownUserOptions(input);
  const report = new ConfigReport(undefined, PLATFORM_USER_AUTH_ENV);
  const base = parseHttpUrl(options.baseUrl, 'baseUrl', report, true);
  const baseUrl = base?.href.replace(/\/+$/, '');
  // Compared to `iss` as a string (RFC 9207 §2.4), so kept exactly as configured rather than normalised by URL.
  const issuer =
    options.issuer === undefined || !parseHttpUrl(options.issuer, 'issuer', report, false) ? baseUrl : options.issuer;

  if (typeof options.clientId !== 'string' || options.clientId.trim() === '')
    report.problem('clientId', 'is required (the client id registered for user sign-in)');
  const redirectUri = checkRedirectUri(options.redirectUri, report);
  if (options.scope !== undefined && !SCOPE.test(options.scope))
    report.problem('scope', 'must be scope names separated by single spaces (RFC 6749 §3.3)');
  const secret = checkSecret(options.stateSecret, report);

  const authorizePath = checkPath(options.authorizePath ?? DEFAULT_AUTHORIZE_PATH, 'authorizePath', report);
  const tokenPath = checkPath(options.tokenPath ?? DEFAULT_USER_TOKEN_PATH, 'tokenPath', report);
  const transactionLifetimeSeconds = options.transactionLifetimeSeconds ?? DEFAULT_TRANSACTION_LIFETIME_SECONDS;
  checkWhole(transactionLifetimeSeconds, 'transactionLifetimeSeconds', 30, MAX_TRANSACTION_LIFETIME_SECONDS, report);
  const sessionLifetimeSeconds = options.sessionLifetimeSeconds ?? DEFAULT_SESSION_LIFETIME_SECONDS;
  checkWhole(sessionLifetimeSeconds, 'sessionLifetimeSeconds', 60, 30 * 24 * 60 * 60, report);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_USER_REQUEST_TIMEOUT_MS;
  checkWhole(requestTimeoutMs, 'requestTimeoutMs', 1, 10 * 60 * 1000, report);

  report.throwIfProblems();
  return {
    authorizationEndpoint: baseUrl! + authorizePath,
    tokenEndpoint: baseUrl! + tokenPath,
    issuer: issuer!,
    clientId: options.clientId,
    redirectUri: redirectUri!,
    scope: options.scope,
    transactionKey: deriveKey(secret!, 'transaction'),
    sessionKey: deriveKey(secret!, 'session'),
    transactionLifetimeSeconds,
    sessionLifetimeSeconds,
    requestTimeoutMs,
    secureCookies: options.secureCookies ?? true,
  };
}

/** RFC 6749 §3.1.2 and RFC 9700 §2.1: absolute, no fragment; https, or http only back to this machine. */
function checkRedirectUri(value: unknown, report: ConfigReport): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') {
    report.problem('redirectUri', 'is required (the callback URL registered with the client)');
    return undefined;
  }
  if (!parseHttpUrl(value, 'redirectUri', report, false)) return undefined;
  if (value.includes('#')) {
    report.problem('redirectUri', 'must not contain a fragment (RFC 6749 §3.1.2)');
    return undefined;
  }
  return value;
}

function checkSecret(value: unknown, report: ConfigReport): Uint8Array | undefined {
  const bytes =
    typeof value === 'string' ? Buffer.from(value, 'utf8') : value instanceof Uint8Array ? value : undefined;
  if (!bytes || bytes.length === 0) {
    report.problem(
      'stateSecret',
      `is required: at least ${MIN_STATE_SECRET_BYTES} random bytes (openssl rand -base64 32)`,
    );
    return undefined;
  }
  if (bytes.length < MIN_STATE_SECRET_BYTES) {
    report.problem(
      'stateSecret',
      `is ${bytes.length} bytes; use at least ${MIN_STATE_SECRET_BYTES} random bytes (openssl rand -base64 32)`,
    );
    return undefined;
  }
  if (new Set(bytes).size < 8) {
    report.problem('stateSecret', 'repeats too few distinct bytes to be random; use openssl rand -base64 32');
    return undefined;
  }
  return bytes;
}

function checkPath(path: string, option: string, report: ConfigReport): string {
  if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//') || /[?#]/.test(path))
    report.problem(option, "must be a path starting with '/', without query or fragment");
  return path;
}

function checkWhole(value: unknown, option: string, min: number, max: number, report: ConfigReport): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    report.problem(option, `must be a whole number from ${min} to ${max}`);
}

/** HKDF-SHA256 (RFC 5869), one key per purpose, so the secret itself never encrypts anything. */
function deriveKey(secret: Uint8Array, purpose: 'transaction' | 'session'): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, new Uint8Array(0), `nestjs-platform-auth user ${purpose} v1`, 32));
}
