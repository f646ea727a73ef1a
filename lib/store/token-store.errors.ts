/** Classes node-redis (5 and 6) gives the errors Redis answers with; their message is Redis's reply. */
const REPLY_ERRORS = new Set(['ErrorReply', 'SimpleError', 'BlobError']);
/** Redis replies start with an upper-case word that names the error: `WRONGPASS`, `NOPERM`, `MOVED`, `READONLY`. */
const REPLY_WORD = /^([A-Z][A-Z_]{1,31})(?=\s|$)/;
/** Node's codes: `ECONNREFUSED`, `SELF_SIGNED_CERT_IN_CHAIN`, `ERR_TLS_CERT_ALTNAME_INVALID`, … */
const CODE = /^[A-Z][A-Z0-9_]{1,47}$/;

/**
 * A store error in words fit for a log line and `status()`: the first word of Redis's reply, else a TLS or
 * connection code, else the client error's class name (`ConnectionTimeoutError`, `ClientClosedError`). Never the rest
 * of a message: a reply such as `MOVED 3999 10.0.0.7:6381` or a connection error can carry an address, and a URL a
 * password. Looks through `cause` and the first of an `AggregateError`'s errors (Node's happy-eyeballs connect).
 */
export function describeStoreError(error: unknown): string {
  const seen = new Set<unknown>();
  let named: string | undefined;
  for (let current = error; current && typeof current === 'object' && !seen.has(current);) {
    seen.add(current);
    const { code, message, cause, errors } = current as {
      code?: unknown;
      message?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    if (isReplyError(current) && typeof message === 'string') {
      const word = REPLY_WORD.exec(message)?.[1];
      if (word) return word;
    }
    if (typeof code === 'string' && CODE.test(code)) return code;
    named ??= className(current);
    current = cause ?? (Array.isArray(errors) ? (errors as unknown[])[0] : undefined);
  }
  return named ?? 'error';
}

function isReplyError(error: object): boolean {
  for (let prototype = Object.getPrototypeOf(error) as object | null; prototype;) {
    const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string' && REPLY_ERRORS.has(name)) return true;
    prototype = Object.getPrototypeOf(prototype) as object | null;
  }
  return false;
}

function className(error: object): string | undefined {
  const name = (error as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && /^\w{1,40}$/.test(name) && name !== 'Error' && name !== 'Object'
    ? name
    : undefined;
}
