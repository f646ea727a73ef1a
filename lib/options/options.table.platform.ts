import type { OptionRow } from './options.table.types.js';

/** The platform and the integration on it. */
export const PLATFORM_ROWS = {
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
} as const satisfies Record<string, OptionRow>;

/** The assertion, the token's renewal and the credentials' upkeep. */
export const ASSERTION_ROWS = {
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
    default: 'warn',
    rule: 'acquires a token while the application boots, so a wrong machineId shows at deploy time: `warn` logs the refusal and its hint and starts, `fail` rejects `app.init()`, `off` waits for the first call',
  },
  credentialsReloadIntervalMs: {
    env: 'PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS',
    kind: 'number',
    min: 1_000,
    rule: 'off by default; re-read the `*_PATH` files this often and switch to changed files that pass every check',
  },
} as const satisfies Record<string, OptionRow>;

/** What only code can pass. */
export const RUNTIME_ROWS = {
  clock: { kind: 'instance', rule: 'the time source; default the system clock; tests pass a `FakeClock`' },
  logger: {
    kind: 'instance',
    rule: "where the module's lines go (any `LoggerService`, called with the message only); default Nest's `Logger`, context `PlatformAuth`",
  },
} as const satisfies Record<string, OptionRow>;
