/** The platform's numbers and names (docs/platform-contract.md), and the option defaults the code refers to by name. */
import { PLATFORM_AUTH_OPTIONS } from './options.table.js';

export const PLATFORM_AUTH_CONFIG_NAMESPACE = 'platformAuth';

export const DEFAULT_TOKEN_PATH: string = PLATFORM_AUTH_OPTIONS['exchange.path'].default;
export const CLIENT_CERTIFICATE_GRANT = 'clientcertificate';

/** Platform contract, "Assertion": an assertion lives at most five minutes. */
export const MAX_ASSERTION_LIFETIME_SECONDS: number = PLATFORM_AUTH_OPTIONS.assertionLifetimeSeconds.max;
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
export const DEFAULT_CLOCK_MARGIN_SECONDS: number = PLATFORM_AUTH_OPTIONS.clockMarginSeconds.default;
