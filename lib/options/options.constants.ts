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
export const MIN_TOKEN_LIFETIME_SECONDS = 10;
export const MIN_RSA_MODULUS_BITS = 2048;
export const EXPECTED_RSA_MODULUS_BITS = 2048;
export const CERTIFICATE_EXPIRY_WARNING_DAYS = 30;
export const CLOCK_SKEW_TOLERANCE_SECONDS = 30;

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
  credentialsReloadIntervalMs: 'PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS',
} as const;

/** Options whose environment variable holds a number. */
export const NUMERIC_ENV_OPTIONS: ReadonlySet<string> = new Set(['credentialsReloadIntervalMs']);
export const MIN_CREDENTIALS_RELOAD_INTERVAL_MS = 1_000;
