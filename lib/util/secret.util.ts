import { inspect } from 'node:util';

/**
 * Where a `Secret` keeps the function that reads its text. A registry symbol, so the ES module and CommonJS builds
 * (both can be loaded in one process) recognise each other's secrets.
 */
const READ = Symbol.for('nestjs-platform-auth.secret');

/** What any rendering of a secret shows. */
const SECRET_PLACEHOLDER = '[secret]';

/**
 * Text that is not kept where dumps reach: the object holds only a function that reads the text (from the
 * environment when it is used, or from its closure), and renders as `[secret]` through `String`, `JSON.stringify` and
 * `util.inspect`. `ConfigService` namespaces and the module's options hold these instead of text.
 */
export interface Secret {
  readonly [READ]: () => string | undefined;
}

const prototype = Object.freeze({
  toString: () => SECRET_PLACEHOLDER,
  toJSON: () => SECRET_PLACEHOLDER,
  [inspect.custom]: () => SECRET_PLACEHOLDER,
  [Symbol.toPrimitive]: () => SECRET_PLACEHOLDER,
});

/** A secret whose text `read` returns when it is used (`undefined`: not set). */
export function secret(read: () => string | undefined): Secret {
  return Object.freeze(Object.create(prototype, { [READ]: { value: read, enumerable: false } }) as Secret);
}

/** A secret holding `text` in a closure. */
export function secretText(text: string): Secret {
  return secret(() => text);
}

export function isSecret(value: unknown): value is Secret {
  return typeof value === 'object' && value !== null && typeof (value as Partial<Secret>)[READ] === 'function';
}

/** The text of a secret; any other value as it is. */
export function reveal(value: Secret): string | undefined;
export function reveal(value: unknown): unknown;
export function reveal(value: unknown): unknown {
  return isSecret(value) ? value[READ]() : value;
}
