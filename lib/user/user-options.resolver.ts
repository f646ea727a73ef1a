import { forgetCredentialText, ownOptions } from '../options/own-options.util.js';
import { readOptions } from '../options/options.read.js';
import type { OptionRow } from '../options/options.table.js';
import { PLATFORM_USER_AUTH_OPTIONS } from '../options/options.table.user.js';
import type { KeySource } from '../options/key-source.interface.js';
import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import type { AssertionKey } from '../credentials/assertion-key.interface.js';
import { ConfigReport } from '../options/config.report.js';
import type { ConfigProblem } from '../platform-auth.errors.js';
import { parseHttpUrl } from '../options/url.rules.js';
import { secretText, type Secret } from '../util/secret.util.js';
import { repeatsTooFewBytes } from '../util/key-strength.util.js';
import {
  DEFAULT_AUTHORIZE_PATH,
  DEFAULT_USER_TOKEN_PATH,
  MIN_STATE_SECRET_BYTES,
  PLATFORM_USER_AUTH_ENV,
} from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions, UserClientAuthentication } from './platform-user-auth-options.interface.js';
import { checkClientAuthentication, openClientKey } from './user-client-auth.js';
import { discoverServer, type UserServerMetadata } from './user-server.metadata.js';

/** The options after validation, with defaults applied, keys derived and the server known. Built once per module instance. */
export interface ResolvedUserAuthConfig {
  /** The authorization server's endpoints and issuer, from discovery or from `baseUrl` and the paths. */
  readonly server: UserServerMetadata;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope?: string;
  /** Encrypts transactions (A256GCM). A `KeyObject`: no dump of the container shows its bytes. */
  readonly transactionKey: KeyObject;
  /** Encrypts sessions (A256GCM); a different key, so one can never be passed off as the other. */
  readonly sessionKey: KeyObject;
  readonly transactionLifetimeSeconds: number;
  readonly sessionLifetimeSeconds: number;
  readonly requestTimeoutMs: number;
  readonly secureCookies: boolean;
  readonly clientAuthentication: UserClientAuthentication;
  /** `client_secret_basic` / `client_secret_post`: read with `reveal()` for each request, `[secret]` in any dump. */
  readonly clientSecret?: Secret;
  /** `private_key_jwt`: the key client assertions are signed with (closed when the module shuts down). */
  readonly clientKey?: AssertionKey;
  /** What start-up found worth a warning (a variable the module does not read, say); the module logs each once. */
  readonly warnings: readonly ConfigProblem[];
}

/** RFC 6749 §3.3: scope tokens are printable ASCII without space, `"` or `\\`. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

type UserOptionPath = keyof PlatformUserAuthOptions | `key.${keyof KeySource}`;

/** The compiler fails here when an option is added to the interface but not to the option table. */
PLATFORM_USER_AUTH_OPTIONS satisfies Record<UserOptionPath, OptionRow>;

/**
 * The options as the caller set them, own properties only: a polluted `Object.prototype` (`secureCookies: false`,
 * a `stateSecret` an attacker knows) must not fill settings the caller never set.
 */
export function ownUserOptions(input: unknown): PlatformUserAuthOptions {
  return ownOptions(input, PLATFORM_USER_AUTH_OPTIONS) as unknown as PlatformUserAuthOptions;
}

/** Drops the secrets and PEM text from options the module owns (see `ownUserOptions`), once start-up has used them. */
export function forgetUserSecrets(options: PlatformUserAuthOptions): void {
  forgetCredentialText(options, PLATFORM_USER_AUTH_OPTIONS);
}

/** A default of the option table, by the option's name. */
function defaultOf<T>(name: keyof typeof PLATFORM_USER_AUTH_OPTIONS): T {
  return (PLATFORM_USER_AUTH_OPTIONS[name] as OptionRow).default as T;
}

function bounds(name: keyof typeof PLATFORM_USER_AUTH_OPTIONS): [number, number] {
  const row: OptionRow = PLATFORM_USER_AUTH_OPTIONS[name];
  return [row.min ?? 0, row.max ?? Number.MAX_SAFE_INTEGER];
}

/**
 * Validates every option, reads the server's metadata when `discovery` is on and opens the `private_key_jwt` key;
 * throws one `PlatformAuthConfigError` listing all problems. `nowMs` checks the certificate's validity.
 */
export async function resolveUserAuthOptions(
  input: PlatformUserAuthOptions,
  nowMs: number,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ResolvedUserAuthConfig> {
  const report = new ConfigReport(undefined, PLATFORM_USER_AUTH_ENV);
  const options = readOptions<PlatformUserAuthOptions>(input, report, PLATFORM_USER_AUTH_OPTIONS);
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
  const discovery = options.discovery ?? false;
  if (typeof discovery !== 'boolean') report.problem('discovery', 'must be true or false');
  const clientAuthentication = checkClientAuthentication(options, report);

  const paths = {
    authorizePath: options.authorizePath,
    tokenPath: options.tokenPath,
    revocationPath: options.revocationPath,
    endSessionPath: options.endSessionPath,
  };
  for (const [option, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    if (discovery === true)
      report.problem(option, "is not used with discovery: the server's metadata names its endpoints");
    else checkPath(path, option, report);
  }
  const transactionLifetimeSeconds =
    options.transactionLifetimeSeconds ?? defaultOf<number>('transactionLifetimeSeconds');
  checkWhole(transactionLifetimeSeconds, 'transactionLifetimeSeconds', bounds('transactionLifetimeSeconds'), report);
  const sessionLifetimeSeconds = options.sessionLifetimeSeconds ?? defaultOf<number>('sessionLifetimeSeconds');
  checkWhole(sessionLifetimeSeconds, 'sessionLifetimeSeconds', bounds('sessionLifetimeSeconds'), report);
  const requestTimeoutMs = options.requestTimeoutMs ?? defaultOf<number>('requestTimeoutMs');
  checkWhole(requestTimeoutMs, 'requestTimeoutMs', bounds('requestTimeoutMs'), report);

  const clientKey =
    clientAuthentication === 'private_key_jwt' ? await openClientKey(options, nowMs, report) : undefined;
  let server: UserServerMetadata | undefined;
  if (baseUrl !== undefined && issuer !== undefined && report.problems.length === 0) {
    server =
      discovery === true
        ? await discoverServer(issuer, clientAuthentication, requestTimeoutMs, report)
        : {
            issuer,
            authorization_endpoint: baseUrl + (paths.authorizePath ?? DEFAULT_AUTHORIZE_PATH),
            token_endpoint: baseUrl + (paths.tokenPath ?? DEFAULT_USER_TOKEN_PATH),
            ...(paths.revocationPath ? { revocation_endpoint: baseUrl + paths.revocationPath } : {}),
            ...(paths.endSessionPath ? { end_session_endpoint: baseUrl + paths.endSessionPath } : {}),
          };
  }
  report.checkVariables(env);
  if (report.problems.length > 0) await clientKey?.close();
  report.throwIfProblems();
  return {
    server: server!,
    clientId: options.clientId,
    redirectUri: redirectUri!,
    scope: options.scope,
    transactionKey: deriveKey(secret!, 'transaction'),
    sessionKey: deriveKey(secret!, 'session'),
    transactionLifetimeSeconds,
    sessionLifetimeSeconds,
    requestTimeoutMs,
    secureCookies: options.secureCookies ?? true,
    clientAuthentication,
    ...(clientAuthentication === 'client_secret_basic' || clientAuthentication === 'client_secret_post'
      ? { clientSecret: secretText(options.clientSecret!) }
      : {}),
    ...(clientKey ? { clientKey } : {}),
    warnings: report.warnings,
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
  if (repeatsTooFewBytes(typeof value === 'string' ? value : bytes)) {
    report.problem('stateSecret', 'repeats too few distinct bytes to be random; use openssl rand -base64 32');
    return undefined;
  }
  return bytes;
}

function checkPath(path: unknown, option: string, report: ConfigReport): void {
  if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//') || /[?#]/.test(path))
    report.problem(option, "must be a path starting with '/', without query or fragment");
}

function checkWhole(value: unknown, option: string, [min, max]: [number, number], report: ConfigReport): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    report.problem(option, `must be a whole number from ${min} to ${max}`);
}

/** HKDF-SHA256 (RFC 5869), one key per purpose, so the secret itself never encrypts anything. */
function deriveKey(secret: Uint8Array, purpose: 'transaction' | 'session'): KeyObject {
  return createSecretKey(
    new Uint8Array(hkdfSync('sha256', secret, new Uint8Array(0), `nestjs-platform-auth user ${purpose} v1`, 32)),
  );
}
