import type { PlatformAuthOptions, RetryOptions, TokenStoreTimingOptions } from './platform-auth-options.interface.js';

/**
 * How a setting's value is written and checked:
 * - `number`, `boolean`, `list`, `enum`: checked from this table (`min`/`max`, `values`); environment text is parsed
 *   to that type;
 * - `text`, `url`, `pem`, `path`, `object`: checked by the resolver or the credentials loader, which know more;
 * - `instance`: an object only code can pass (a store, a clock, a logger), never from the environment.
 */
export type OptionKind =
  'text' | 'url' | 'pem' | 'path' | 'number' | 'boolean' | 'list' | 'enum' | 'object' | 'instance';

export interface OptionRow {
  /** The environment variable that fills it, for the default integration (`PLATFORM_<NAME>_…` for a named one). */
  readonly env?: string;
  readonly kind: OptionKind;
  /** The value used when it is not set; `undefined` when there is none or it is derived (see `rule`). */
  readonly default?: unknown;
  /** Smallest and largest value of a `number`. */
  readonly min?: number;
  readonly max?: number;
  /** Allowed values of an `enum`. */
  readonly values?: readonly string[];
  /**
   * Secret: never printed, and not kept as text once start-up has used it (dropped from the module's options,
   * read from the environment only when used by `platformAuthConfig`).
   */
  readonly secret?: true;
  /** What a user needs to know, in one line: the README's options table shows it. */
  readonly rule: string;
}

type NestedNames = `retry.${keyof RetryOptions}` | `tokenStoreTiming.${keyof TokenStoreTimingOptions}`;

/**
 * Every option of `PlatformAuthOptions`, and the nested ones, in one place: the resolver takes defaults and simple
 * checks from here, `platformAuthConfig` the variables and how to parse them, `ownOptions` the names, and the
 * README's table is checked against it by the test suite. The compiler fails here when an option is added to the
 * interface but not to the table.
 */
export const PLATFORM_AUTH_OPTIONS = {
  baseUrl: {
    env: 'PLATFORM_BASE_URL',
    kind: 'url',
    rule: "required; the platform's origin only, `https://{platform_domain}`: no path, userinfo, query or fragment; `http:` only for loopback hosts",
  },
  machineId: {
    env: 'PLATFORM_MACHINE_ID',
    kind: 'text',
    rule: 'required; the machineId the portal shows; becomes `sub`',
  },
  privateKey: {
    env: 'PLATFORM_PRIVATE_KEY',
    kind: 'pem',
    secret: true,
    rule: 'PEM text of the RSA key (PKCS#8 or PKCS#1, ≥ 2048 bits, warning when not 2048); this, `privateKeyPath`, `privateKeyUri` or `signer`; literal `\\n` and CRLF tolerated',
  },
  privateKeyPath: {
    env: 'PLATFORM_PRIVATE_KEY_PATH',
    kind: 'path',
    rule: 'path of the PEM key file; this or `privateKey`',
  },
  privateKeyPassphrase: {
    env: 'PLATFORM_PRIVATE_KEY_PASSPHRASE',
    kind: 'text',
    secret: true,
    rule: 'for an encrypted PEM (PKCS#8 or legacy PKCS#1)',
  },
  privateKeyUri: {
    env: 'PLATFORM_PRIVATE_KEY_URI',
    kind: 'text',
    secret: true,
    rule: 'RFC 7512 `pkcs11:` URI of a key inside a PKCS#11 token (`token=`, `object=` or `id=`, `?module-path=`, `pin-source=file:…` or `pin-value=`), instead of a PEM key; needs the `pkcs11js` package and the certificate',
  },
  signer: {
    kind: 'instance',
    rule: 'an object whose `sign(signingInput)` returns an RS256 signature (RSASSA-PKCS1-v1_5, SHA-256), from a KMS say, instead of a PEM key; each signature is checked against the certificate, which is required',
  },
  certificate: {
    env: 'PLATFORM_CERTIFICATE',
    kind: 'pem',
    rule: 'PEM text of the registered certificate: exactly one, matching the key, valid now (warning within 30 days of expiry); the thumbprint is computed from it',
  },
  certificatePath: {
    env: 'PLATFORM_CERTIFICATE_PATH',
    kind: 'path',
    rule: 'path of the PEM certificate file; this or `certificate`',
  },
  nextPrivateKey: {
    env: 'PLATFORM_NEXT_PRIVATE_KEY',
    kind: 'pem',
    secret: true,
    rule: "the next pair's key, as `privateKey`: tried within the same exchange when the platform refuses the current pair as not registered, and current once accepted; this, `nextPrivateKeyPath`, `nextPrivateKeyUri` or `nextSigner`",
  },
  nextPrivateKeyPath: {
    env: 'PLATFORM_NEXT_PRIVATE_KEY_PATH',
    kind: 'path',
    rule: "path of the next pair's PEM key file; re-read with `credentialsReloadIntervalMs`",
  },
  nextPrivateKeyUri: {
    env: 'PLATFORM_NEXT_PRIVATE_KEY_URI',
    kind: 'text',
    secret: true,
    rule: "`pkcs11:` URI of the next pair's key, as `privateKeyUri`",
  },
  nextSigner: {
    kind: 'instance',
    rule: "the next pair's signer, as `signer`",
  },
  nextCertificate: {
    env: 'PLATFORM_NEXT_CERTIFICATE',
    kind: 'pem',
    rule: "PEM text of the next pair's certificate: checked like `certificate`, and its thumbprint must differ from the current one",
  },
  nextCertificatePath: {
    env: 'PLATFORM_NEXT_CERTIFICATE_PATH',
    kind: 'path',
    rule: "path of the next pair's PEM certificate file; re-read with `credentialsReloadIntervalMs`",
  },
  thumbprint: {
    env: 'PLATFORM_CERT_THUMBPRINT',
    kind: 'text',
    rule: 'required only without a certificate; compared ignoring case, colons and spaces',
  },
  thumbprintAlgorithm: {
    env: 'PLATFORM_THUMBPRINT_ALGORITHM',
    kind: 'enum',
    values: ['sha1', 'sha256'],
    default: 'sha1',
    rule: "hash of the certificate that becomes `iss`: `sha1` is the portal's 40-hex form",
  },
  audience: {
    env: 'PLATFORM_AUDIENCE',
    kind: 'text',
    rule: "the assertion's `aud`; default: the platform domain, `new URL(baseUrl).host`",
  },
  tokenPath: {
    kind: 'text',
    default: '/loginservice/connect/token',
    rule: 'the token endpoint below `baseUrl`',
  },
  tokenEncoding: {
    kind: 'enum',
    values: ['jwt', 'base64'],
    default: 'jwt',
    rule: 'how the assertion travels in the `token` field: `base64` wraps it for a platform that wants that',
  },
  refreshBeforeExpirySeconds: {
    env: 'PLATFORM_REFRESH_BEFORE_EXPIRY_SECONDS',
    kind: 'number',
    min: 0,
    default: 60,
    rule: "renew this long before expiry, never more than half the token's lifetime; up to 10 % jitter makes it later",
  },
  assertionLifetimeSeconds: {
    kind: 'number',
    min: 1,
    max: 300,
    default: 300,
    rule: 'whole seconds; the platform accepts at most 300',
  },
  allowedOrigins: {
    env: 'PLATFORM_ALLOWED_ORIGINS',
    kind: 'list',
    rule: "origins besides `baseUrl`'s that may receive the token; default none; comma-separated in the environment",
  },
  exchangeTimeoutMs: {
    env: 'PLATFORM_EXCHANGE_TIMEOUT_MS',
    kind: 'number',
    min: 1,
    default: 10_000,
    rule: 'bound on one token request, body included',
  },
  maxResponseBytes: {
    kind: 'number',
    min: 256,
    default: 64 * 1024,
    rule: 'a larger token response is refused',
  },
  retry: {
    kind: 'object',
    rule: 'network errors, timeouts, 5xx, 408 and 429 are retried within one exchange, as the `retry.*` rows say',
  },
  'retry.maxAttempts': { kind: 'number', min: 1, default: 4, rule: 'attempts per exchange, the first included' },
  'retry.baseDelayMs': {
    kind: 'number',
    min: 0,
    default: 200,
    rule: 'first back-off delay; doubled per attempt, with equal jitter',
  },
  'retry.maxDelayMs': {
    kind: 'number',
    min: 0,
    default: 5_000,
    rule: 'largest single delay; a longer `Retry-After` ends the exchange and is honoured by the failure back-off',
  },
  'retry.maxTotalMs': {
    env: 'PLATFORM_RETRY_MAX_TOTAL_MS',
    kind: 'number',
    min: 0,
    default: 30_000,
    rule: 'budget of one exchange, all attempts and delays included',
  },
  failureBackoffMs: {
    kind: 'number',
    min: 0,
    default: 1_000,
    rule: 'after a failed exchange callers fail fast this long, doubling per consecutive failure up to 30 s',
  },
  correctClockSkew: {
    env: 'PLATFORM_CORRECT_CLOCK_SKEW',
    kind: 'boolean',
    default: false,
    rule: "shift assertion times by the offset measured from the platform's `Date` header",
  },
  clockMarginSeconds: {
    env: 'PLATFORM_CLOCK_MARGIN_SECONDS',
    kind: 'number',
    min: 0,
    max: 120,
    default: 60,
    rule: '`iat` and `nbf` are back-dated by it, so a platform clock that far behind (or ahead) accepts the assertion; `exp − iat` stays ≤ 300',
  },
  startupCheck: {
    env: 'PLATFORM_STARTUP_CHECK',
    kind: 'enum',
    values: ['off', 'warn', 'fail'],
    default: 'off',
    rule: '`fail` or `warn` acquires a token while the application boots, so a wrong machineId shows at deploy time',
  },
  credentialsReloadIntervalMs: {
    env: 'PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS',
    kind: 'number',
    min: 1_000,
    rule: 'off by default; re-read the `*_PATH` files this often and switch to changed files that pass every check',
  },
  tokenStore: {
    kind: 'instance',
    rule: 'a `TokenStore` shared by the replicas of a service; stays yours to close',
  },
  tokenStoreUrl: {
    env: 'PLATFORM_TOKEN_STORE_URL',
    kind: 'url',
    secret: true,
    rule: 'a standalone Redis to share tokens through, `redis://` or `rediss://` (TLS), credentials allowed (needs the `redis` package)',
  },
  tokenStoreClusterNodes: {
    env: 'PLATFORM_TOKEN_STORE_CLUSTER_NODES',
    kind: 'list',
    rule: 'Redis Cluster instead: seed-node URLs, all `redis://` or all `rediss://`, without credentials; comma-separated in the environment',
  },
  tokenStoreSentinelNodes: {
    env: 'PLATFORM_TOKEN_STORE_SENTINEL_NODES',
    kind: 'list',
    rule: 'Redis Sentinel instead: the sentinels as `host:port`, with `tokenStoreSentinelMaster`; comma-separated in the environment',
  },
  tokenStoreSentinelMaster: {
    env: 'PLATFORM_TOKEN_STORE_SENTINEL_MASTER',
    kind: 'text',
    rule: "the master's name the sentinels monitor; with `tokenStoreSentinelNodes`",
  },
  tokenStoreUsername: {
    env: 'PLATFORM_TOKEN_STORE_USERNAME',
    kind: 'text',
    rule: "Redis ACL user, any mode; needs a password; overrides the URL's",
  },
  tokenStorePassword: {
    env: 'PLATFORM_TOKEN_STORE_PASSWORD',
    kind: 'text',
    secret: true,
    rule: "Redis password (of `tokenStoreUsername`, else of the default user), any mode; overrides the URL's",
  },
  tokenStoreTlsCaPath: {
    env: 'PLATFORM_TOKEN_STORE_TLS_CA_PATH',
    kind: 'path',
    rule: "PEM file of the CA(s) that signed Redis's certificate (a private CA); TLS in any mode",
  },
  tokenStoreTlsCertPath: {
    env: 'PLATFORM_TOKEN_STORE_TLS_CERT_PATH',
    kind: 'path',
    rule: 'PEM client certificate for mutual TLS, with `tokenStoreTlsKeyPath`; files are read again on each new connection',
  },
  tokenStoreTlsKeyPath: {
    env: 'PLATFORM_TOKEN_STORE_TLS_KEY_PATH',
    kind: 'path',
    rule: 'PEM private key of `tokenStoreTlsCertPath` (unencrypted)',
  },
  tokenStoreEncryptionKey: {
    env: 'PLATFORM_TOKEN_STORE_ENCRYPTION_KEY',
    kind: 'text',
    secret: true,
    rule: 'required with a store: 32 random bytes, base64 or hex, one per trust domain; several (comma-separated) rotate keys, the first encrypts',
  },
  tokenStoreKeyPrefix: {
    kind: 'text',
    default: 'platform-auth:',
    rule: "prefix of the store's key names; no braces or white space",
  },
  tokenStoreTiming: { kind: 'object', rule: "bounds of the store's protocol, as the `tokenStoreTiming.*` rows say" },
  'tokenStoreTiming.operationTimeoutMs': {
    kind: 'number',
    min: 1,
    default: 500,
    rule: 'bound on each store operation; past it the replica exchanges locally',
  },
  'tokenStoreTiming.lockTtlMs': {
    kind: 'number',
    min: 1,
    default: 15_000,
    rule: "how long the exchanging replica holds the lock; a crashed holder's lock lapses after it",
  },
  'tokenStoreTiming.waitTimeoutMs': {
    kind: 'number',
    min: 1,
    default: 20_000,
    rule: "how long a replica waits for another's token before exchanging itself; keep it above the lock's TTL",
  },
  clock: { kind: 'instance', rule: 'the time source; default the system clock; tests pass a `FakeClock`' },
  logger: {
    kind: 'instance',
    rule: "where the module's lines go (any `LoggerService`, called with the message only); default Nest's `Logger`, context `PlatformAuth`",
  },
} as const satisfies Record<keyof PlatformAuthOptions | NestedNames, OptionRow>;

export type OptionName = keyof typeof PLATFORM_AUTH_OPTIONS;

const rows = Object.entries(PLATFORM_AUTH_OPTIONS) as [OptionName, OptionRow][];

/** The top-level option names, for copying own properties (`ownOptions`). */
export const OPTION_NAMES: readonly (keyof PlatformAuthOptions)[] = rows
  .map(([name]) => name)
  .filter((name): name is keyof PlatformAuthOptions => !name.includes('.'));

/** The names below `parent` (`retry` → `maxAttempts`, …). */
export function nestedNames(parent: 'retry' | 'tokenStoreTiming'): string[] {
  return rows.filter(([name]) => name.startsWith(`${parent}.`)).map(([name]) => name.slice(parent.length + 1));
}

/** Option name → environment variable, for every option the environment can fill. */
export const PLATFORM_AUTH_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  rows.flatMap(([name, row]) => (row.env === undefined ? [] : [[name, row.env]])),
);

/** The secret options: never kept as text after start-up. */
export const SECRET_OPTIONS: readonly (keyof PlatformAuthOptions)[] = OPTION_NAMES.filter(
  (name) => (PLATFORM_AUTH_OPTIONS[name] as OptionRow).secret === true,
);

/** Options whose text is dropped once start-up has parsed it: the secrets, and PEM text. */
export const FORGOTTEN_AFTER_STARTUP: readonly (keyof PlatformAuthOptions)[] = OPTION_NAMES.filter((name) => {
  const row: OptionRow = PLATFORM_AUTH_OPTIONS[name];
  return row.secret === true || row.kind === 'pem';
});

/** The default of `name` from the table (typed by the caller, who knows the option's type). */
export function optionDefault<T>(name: OptionName): T {
  return (PLATFORM_AUTH_OPTIONS[name] as OptionRow).default as T;
}

/** One row of the README's options table: option, variable, default, rule. */
export function optionTableCells(name: OptionName): [string, string, string, string] {
  const row: OptionRow = PLATFORM_AUTH_OPTIONS[name];
  const shown = row.default === undefined ? '—' : describeDefault(row.default);
  const rule = row.secret ? `${row.rule}; secret: never printed` : row.rule;
  return [`\`${name}\``, row.env === undefined ? '—' : `\`${row.env}\``, shown, rule];
}

function describeDefault(value: unknown): string {
  if (typeof value === 'number') return value.toLocaleString('en-US');
  return `\`${String(value)}\``;
}

export const OPTION_TABLE_NAMES: readonly OptionName[] = rows.map(([name]) => name);
