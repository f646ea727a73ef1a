import type { PlatformAuthOptions, RetryOptions } from './platform-auth-options.interface.js';

/** Every option, as a record so that the compiler fails here when an option is added to the interface but not here. */
const OPTION_NAMES = Object.keys({
  baseUrl: true,
  machineId: true,
  privateKey: true,
  privateKeyPath: true,
  privateKeyPassphrase: true,
  certificate: true,
  certificatePath: true,
  thumbprint: true,
  thumbprintAlgorithm: true,
  audience: true,
  tokenPath: true,
  tokenEncoding: true,
  refreshBeforeExpirySeconds: true,
  assertionLifetimeSeconds: true,
  allowedOrigins: true,
  exchangeTimeoutMs: true,
  maxResponseBytes: true,
  retry: true,
  failureBackoffMs: true,
  correctClockSkew: true,
  clockMarginSeconds: true,
  startupCheck: true,
  clock: true,
  logger: true,
  credentialsReloadIntervalMs: true,
  tokenStore: true,
  tokenStoreUrl: true,
  tokenStoreEncryptionKey: true,
  tokenStoreKeyPrefix: true,
  tokenStoreTiming: true,
} satisfies Record<keyof PlatformAuthOptions, true>);

const RETRY_NAMES = ['maxAttempts', 'baseDelayMs', 'maxDelayMs', 'maxTotalMs'] as const satisfies ReadonlyArray<
  keyof RetryOptions
>;

/** The settings that hold key or certificate text, or the passphrase: forgotten once the credentials are parsed. */
const CREDENTIAL_TEXT = ['privateKey', 'privateKeyPassphrase', 'certificate'] as const;

function own(source: object, name: string): unknown {
  return Object.hasOwn(source, name) ? (source as Record<string, unknown>)[name] : undefined;
}

/** The own properties `names` of `source`, in an object without a prototype. */
export function copyOwn(source: object, names: readonly string[]): Record<string, unknown> {
  const copy = Object.create(null) as Record<string, unknown>;
  for (const name of names) {
    const value = own(source, name);
    if (value !== undefined) copy[name] = value;
  }
  return copy;
}

/**
 * The options as the caller set them: own properties only, copied into an object of the module's own (with no
 * prototype). Options parsed from JSON with a `__proto__` key, or a polluted `Object.prototype`, would otherwise
 * lend inherited values (an extra allowed origin, say) to settings the caller never set.
 */
export function ownOptions(input: unknown): PlatformAuthOptions {
  if (typeof input !== 'object' || input === null) return Object.create(null) as PlatformAuthOptions;
  const options = copyOwn(input, OPTION_NAMES);
  const { retry, allowedOrigins } = options;
  if (typeof retry === 'object' && retry !== null) options.retry = copyOwn(retry, RETRY_NAMES);
  if (Array.isArray(allowedOrigins)) {
    options.allowedOrigins = Array.from({ length: allowedOrigins.length }, (_, i) => own(allowedOrigins, String(i)));
  }
  return options as unknown as PlatformAuthOptions;
}

/** Drops the key text, the passphrase and the certificate text from options the module owns (see `ownOptions`). */
export function forgetCredentialText(options: PlatformAuthOptions): void {
  for (const name of CREDENTIAL_TEXT) delete options[name];
}
