import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import { FORGOTTEN_AFTER_STARTUP, OPTION_NAMES, SECRET_OPTIONS, nestedNames } from './options.table.js';
import { isSecret, reveal } from '../util/secret.util.js';

const RETRY_NAMES = nestedNames('retry');
const TIMING_NAMES = nestedNames('tokenStoreTiming');

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
  const { retry, tokenStoreTiming, allowedOrigins } = options;
  if (typeof retry === 'object' && retry !== null) options.retry = copyOwn(retry, RETRY_NAMES);
  if (typeof tokenStoreTiming === 'object' && tokenStoreTiming !== null)
    options.tokenStoreTiming = copyOwn(tokenStoreTiming, TIMING_NAMES);
  if (Array.isArray(allowedOrigins)) {
    options.allowedOrigins = Array.from({ length: allowedOrigins.length }, (_, i) => own(allowedOrigins, String(i)));
  }
  return options as unknown as PlatformAuthOptions;
}

/**
 * `options` with the text of every `Secret` in it (`platformAuthConfig` puts secrets into its namespace as `Secret`s),
 * for the resolver only: the options provider keeps the `Secret`s until start-up drops them.
 */
export function revealSecrets(options: PlatformAuthOptions): PlatformAuthOptions {
  const revealed = copyOwn(options, OPTION_NAMES);
  for (const name of SECRET_OPTIONS) if (isSecret(revealed[name])) revealed[name] = reveal(revealed[name]);
  return revealed as unknown as PlatformAuthOptions;
}

/** Drops the secrets and the PEM text from options the module owns (see `ownOptions`), once start-up has used them. */
export function forgetCredentialText(options: PlatformAuthOptions): void {
  for (const name of FORGOTTEN_AFTER_STARTUP) delete options[name];
}
