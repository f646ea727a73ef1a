import { isTransientAnswer } from './util/transient.rules.js';

/** Brands the errors of this package, whichever of its builds defined them (see `PlatformAuthError`). */
const PLATFORM_AUTH_ERROR = Symbol.for('nestjs-platform-auth.error');

/**
 * Every error the module raises. Messages and fields are built from our own words and from values that are not
 * secret (paths, variable names, status codes, sanitised remote text); key material, passphrases, assertions and
 * tokens never reach them, so `JSON.stringify`, `util.inspect` and loggers are safe to use on any of these.
 */
export abstract class PlatformAuthError extends Error {
  abstract readonly code: string;
  /** Set when the error is about a tenant of a `forTenants` registry: its id. */
  declare readonly tenantId?: string;

  /**
   * `instanceof` holds for an error of the same class from the package's other build (ES module or CommonJS) too,
   * when a process loads both: `catch` blocks and `@Catch(TokenExchangeError)` work whichever build threw. Such an
   * error carries the shared brand, and a class of the same name is in its prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null || !(PLATFORM_AUTH_ERROR in value)) return false;
    for (let proto: unknown = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
      const own = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value as { name?: unknown } | undefined;
      if (own?.name === this.name) return true;
    }
    return false;
  }

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }

  toJSON(): Record<string, unknown> {
    return { ...(this as object), name: this.name, code: this.code, message: this.message };
  }
}
Object.defineProperty(PlatformAuthError.prototype, PLATFORM_AUTH_ERROR, { value: true });

/** One problem of a configuration: what `PlatformAuthConfigError`, `PlatformTenantConfigError` and a rotation list. */
export interface ConfigProblem {
  /**
   * The option it concerns (`key.privateKeyPath`, `tokenStore.url`, `exchange.retry.maxAttempts`), or the name of an
   * earlier shape that start-up refuses (`privateKeyPath`, whose message names the option it moved to).
   */
  readonly option: string;
  /**
   * The option and, where one exists, its environment variable: `key.privateKeyPath (PLATFORM_PRIVATE_KEY_PATH)`.
   */
  readonly setting: string;
  readonly message: string;
}

/** Start-up validation failed. Lists every problem found, not only the first. */
export class PlatformAuthConfigError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_CONFIG';
  readonly problems: readonly ConfigProblem[];
  /** The named integration the problems belong to; absent for the default integration. */
  readonly integration?: string;

  constructor(problems: readonly ConfigProblem[], integration?: string) {
    const lines = problems.map((p) => `  - ${p.setting}: ${p.message}`).join('\n');
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    const named = integration && integration !== 'default' ? ` of integration '${integration}'` : '';
    super(`Invalid platform auth configuration${named} (${count}):\n${lines}`);
    this.problems = problems;
    if (named) this.integration = integration;
  }
}

/**
 * Signing an assertion failed, so nothing was sent to the platform. `reason` says how; `fault` and the message name
 * the likely cause of a signature that does not verify.
 */
export class AssertionSigningError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_SIGNING';
  /**
   * - `failed`: the key could not sign: the signer threw, the PKCS#11 token refused, node:crypto failed (see `detail`);
   * - `timeout`: a signer or a token gave no signature in time;
   * - `closed`: the key was closed (a PKCS#11 key replaced by a rotation or a reload);
   * - `bad-signature`: a signer or a token returned a signature that does not verify with the certificate's public
   *   key (see `fault`).
   */
  readonly reason: 'failed' | 'timeout' | 'closed' | 'bad-signature';
  /** Where the key is: a PEM key in memory, a PKCS#11 token, or the application's `signer`. */
  readonly keySource: 'pem' | 'pkcs11' | 'signer';
  /** The key as messages name it (`signer (KmsSigner)`, `pkcs11:token=…;object=…`, `key.privateKeyPath …`); never a PIN. */
  readonly key: string;
  /** With `failed`: the error's name, or the PKCS#11 return value (`CKR_DEVICE_REMOVED`); never the signer's message. */
  readonly detail?: string;
  /**
   * With `bad-signature`, the likely mistake:
   * - `not-bytes`: the signer returned no byte array (a string, say);
   * - `wrong-length`: not as long as the key's modulus (truncated, text-encoded, or another key size);
   * - `pss`: an RSASSA-PSS signature instead of RSASSA-PKCS1-v1_5;
   * - `double-digest`: PKCS#1 v1.5 over SHA-256 of the input's SHA-256 (hashed by the caller and again by the KMS);
   * - `bare-digest`: PKCS#1 v1.5 over the bare SHA-256 digest, without its DigestInfo prefix (a raw RSA mechanism);
   * - `other-hash`: PKCS#1 v1.5 with another hash than SHA-256;
   * - `other-input`: made with the certificate's key, but over other bytes than the signing input;
   * - `wrong-key`: none of these: made with another key than the certificate's.
   */
  readonly fault?:
    'not-bytes' | 'wrong-length' | 'pss' | 'double-digest' | 'bare-digest' | 'other-hash' | 'other-input' | 'wrong-key';
  /** With `bad-signature`: the bytes returned, when bytes were returned. */
  readonly signatureBytes?: number;
  /** With `bad-signature`: the bytes an RS256 signature with the certificate's key has (256 for RSA-2048). */
  readonly expectedBytes?: number;

  constructor(
    message: string,
    details: Pick<
      AssertionSigningError,
      'reason' | 'keySource' | 'key' | 'detail' | 'fault' | 'signatureBytes' | 'expectedBytes'
    >,
  ) {
    super(message);
    this.reason = details.reason;
    this.keySource = details.keySource;
    this.key = details.key;
    for (const field of ['detail', 'fault', 'signatureBytes', 'expectedBytes'] as const) {
      if (details[field] !== undefined) Object.assign(this, { [field]: details[field] });
    }
  }
}

/** Where an assertion key lives (see `AssertionSigningError.keySource`). */
export type AssertionKeySource = AssertionSigningError['keySource'];
/** Why a signature failed the check against the certificate (see `AssertionSigningError.fault`). */
export type SignatureFault = NonNullable<AssertionSigningError['fault']>;

/** The token exchange failed. Fields, not the message, are the contract. */
export class TokenExchangeError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_TOKEN_EXCHANGE';
  /** What happened, without the hint (the message is `${summary}. ${hint}`). */
  readonly summary: string;
  /**
   * - `http_error`: the token endpoint answered an error status (see `status`, `oauthError`);
   * - `network_error`: no answer: the connection failed (see `networkCode`);
   * - `timeout`: no complete answer within `exchange.timeoutMs`;
   * - `invalid_response`: an answer that is no token response;
   * - `redirect`: the token endpoint redirected, which the exchange never follows;
   * - `aborted`: the application shut down;
   * - `backoff`: not attempted: callers are held back after a failure (see `retryAfterSeconds`).
   */
  declare readonly reason:
    'http_error' | 'network_error' | 'timeout' | 'invalid_response' | 'redirect' | 'aborted' | 'backoff';
  /**
   * Whether the failure passes by itself (the platform down or rate limiting, the network, a timeout, shutdown)
   * rather than a refusal or an answer someone must fix. Decided once, when the exchange ended, and kept by every
   * error derived from it: callers held back during the back-off, a failure another replica shared. The exception
   * filter answers 503 for it, 502 otherwise.
   */
  declare readonly transient: boolean;
  declare readonly status?: number;
  declare readonly oauthError?: string;
  declare readonly oauthErrorDescription?: string;
  /** Attempts made within this exchange (1 when not retried). */
  declare readonly attempts: number;
  declare readonly retried: boolean;
  /** Likely cause and fix, in terms of docs/platform-contract.md#failure-causes. */
  declare readonly hint: string;
  /** Platform clock minus local clock, in milliseconds, when the platform sent a `Date` header. */
  declare readonly clockOffsetMs?: number;
  /** Low-level error code of a network failure (`ECONNRESET`, `ECONNREFUSED`, …). */
  declare readonly networkCode?: string;
  /** When the platform asked to wait (`Retry-After`) or callers are held back, how long, in whole seconds. */
  declare readonly retryAfterSeconds?: number;

  /** `details`: the fields; another `TokenExchangeError` will do, and only its fields are copied. */
  constructor(
    summary: string,
    details: Pick<
      TokenExchangeError,
      | 'reason'
      | 'transient'
      | 'status'
      | 'oauthError'
      | 'oauthErrorDescription'
      | 'attempts'
      | 'retried'
      | 'hint'
      | 'clockOffsetMs'
      | 'networkCode'
      | 'retryAfterSeconds'
    >,
  ) {
    super(`${summary}. ${details.hint}`);
    this.summary = summary;
    // Only the detail fields: a details object spread from another error must not bring its message or stack along.
    for (const field of DETAIL_FIELDS) Object.assign(this, { [field]: details[field] });
  }
}

/** Why an exchange failed (see `TokenExchangeError.reason`). */
export type TokenExchangeFailure = TokenExchangeError['reason'];
/** A `TokenExchangeError`'s fields besides its message. */
export type TokenExchangeErrorDetails = ConstructorParameters<typeof TokenExchangeError>[1];

/** What the constructor copies: every detail field, and nothing else of an error the details were spread from. */
const DETAIL_FIELDS = [
  'reason',
  'transient',
  'status',
  'oauthError',
  'oauthErrorDescription',
  'attempts',
  'retried',
  'hint',
  'clockOffsetMs',
  'networkCode',
  'retryAfterSeconds',
] as const satisfies ReadonlyArray<keyof TokenExchangeErrorDetails>;

/**
 * Which token endpoint answers pass by themselves: 5xx, 429 (rate limited) and 408 (request timeout), as
 * `isTransientAnswer` decides for every sender. Every other 4xx is a refusal of this service's request, which
 * repeating cannot fix. The exchange client applies it to each answer; from there the verdict travels as `transient`.
 */
export function isTransientStatus(status: number): boolean {
  return isTransientAnswer(status, 'exchange');
}

/**
 * The reason of the module's one shutdown signal: what an exchange in flight, a caller after shutdown and a
 * rotation after shutdown all get once the application shuts down.
 */
export function shutdownError(): TokenExchangeError {
  return new TokenExchangeError('token provider is shut down', {
    reason: 'aborted',
    transient: true,
    attempts: 0,
    retried: false,
    hint: 'The application shut down; no new tokens are fetched and credentials are not rotated.',
  });
}

/**
 * `rotateCredentials()` refused the new pair; the credentials in use did not change. `stage: 'validation'`: the
 * pair failed a start-up check (see `problems`); `stage: 'exchange'`: the platform did not accept it (see
 * `exchange`, the failed exchange's error).
 */
export class CredentialRotationError extends PlatformAuthError {
  readonly code = 'PLATFORM_AUTH_CREDENTIAL_ROTATION';

  constructor(
    summary: string,
    readonly stage: 'validation' | 'exchange',
    readonly problems: readonly ConfigProblem[],
    /** The failed test exchange, with its `reason`, `status`, `oauthError`, `hint`, … */
    readonly exchange?: TokenExchangeError,
  ) {
    super(summary);
  }
}
