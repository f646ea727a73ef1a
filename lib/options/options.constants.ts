/** Defaults and limits of the options, and the environment variables that fill them (see docs/platform-contract.md). */

export const PLATFORM_AUTH_CONFIG_NAMESPACE = 'platformAuth';

export const DEFAULT_TOKEN_PATH = '/loginservice/connect/token';
export const CLIENT_CERTIFICATE_GRANT = 'clientcertificate';

/** Platform contract, "Assertion": an assertion lives at most five minutes. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 300;
export const DEFAULT_ASSERTION_LIFETIME_SECONDS = 300;
export const DEFAULT_REFRESH_BEFORE_EXPIRY_SECONDS = 60;
/** Platform contract, "Access tokens": about ten minutes is the stated lifetime; used when `expires_in` is absent. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 600;
export const MAX_TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;
/** Shortest time between two exchanges of one token cache, whatever `expires_in` says: a guard against storms. */
export const MIN_EXCHANGE_INTERVAL_MS = 1_000;
export const MIN_RSA_MODULUS_BITS = 2048;
export const EXPECTED_RSA_MODULUS_BITS = 2048;
export const CERTIFICATE_EXPIRY_WARNING_DAYS = 30;
/**
 * `iat` and `nbf` are back-dated by this much, so a platform clock up to this far behind still accepts the assertion;
 * `exp` stays within the lifetime, so the assertion lives `assertionLifetimeSeconds - margin` past now.
 */
export const DEFAULT_CLOCK_MARGIN_SECONDS = 60;
/** Beyond this the assertion would live shorter past now than the margin it tolerates behind. */
export const MAX_CLOCK_MARGIN_SECONDS = 120;

export const DEFAULT_EXCHANGE_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** Environment variables read by `platformAuthConfig`, keyed by the option they fill. */
export const PLATFORM_AUTH_ENV = {
  baseUrl: 'PLATFORM_BASE_URL',
  machineId: 'PLATFORM_MACHINE_ID',
  privateKey: 'PLATFORM_PRIVATE_KEY',
  privateKeyPath: 'PLATFORM_PRIVATE_KEY_PATH',
  privateKeyPassphrase: 'PLATFORM_PRIVATE_KEY_PASSPHRASE',
  certificate: 'PLATFORM_CERTIFICATE',
  certificatePath: 'PLATFORM_CERTIFICATE_PATH',
  thumbprint: 'PLATFORM_CERT_THUMBPRINT',
  audience: 'PLATFORM_AUDIENCE',
  thumbprintAlgorithm: 'PLATFORM_THUMBPRINT_ALGORITHM',
  allowedOrigins: 'PLATFORM_ALLOWED_ORIGINS',
  correctClockSkew: 'PLATFORM_CORRECT_CLOCK_SKEW',
  clockMarginSeconds: 'PLATFORM_CLOCK_MARGIN_SECONDS',
  startupCheck: 'PLATFORM_STARTUP_CHECK',
  exchangeTimeoutMs: 'PLATFORM_EXCHANGE_TIMEOUT_MS',
  'retry.maxTotalMs': 'PLATFORM_RETRY_MAX_TOTAL_MS',
  refreshBeforeExpirySeconds: 'PLATFORM_REFRESH_BEFORE_EXPIRY_SECONDS',
  credentialsReloadIntervalMs: 'PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS',
  tokenStoreUrl: 'PLATFORM_TOKEN_STORE_URL',
  tokenStoreEncryptionKey: 'PLATFORM_TOKEN_STORE_ENCRYPTION_KEY',
} as const;

/** How each variable's text becomes an option value; the ones not listed are taken as text. */
export type EnvValueKind = 'number' | 'boolean' | 'list';

export const PLATFORM_AUTH_ENV_KINDS: Readonly<Partial<Record<keyof typeof PLATFORM_AUTH_ENV, EnvValueKind>>> = {
  allowedOrigins: 'list',
  correctClockSkew: 'boolean',
  clockMarginSeconds: 'number',
  exchangeTimeoutMs: 'number',
  'retry.maxTotalMs': 'number',
  refreshBeforeExpirySeconds: 'number',
  credentialsReloadIntervalMs: 'number',
};

export const MIN_CREDENTIALS_RELOAD_INTERVAL_MS = 1_000;
