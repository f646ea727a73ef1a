/** Longest tenant id or error name quoted in a message or log line; the rest is cut and marked with `…`. */
const MAX_QUOTED = 64;
/** A name an error class may have: anything else a resolver's error calls itself is not repeated. */
const ERROR_NAME = /^[A-Za-z_$][\w$]{0,63}$/;

function escapeChar(char: string): string {
  const code = char.charCodeAt(0);
  if (char === '\\' || char === "'") return `\\${char}`;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text from a request or a resolver, fit for one line of a message or log: at most 64 characters, every character
 * outside printable ASCII (line breaks, escape sequences, look-alikes) and every quote or backslash escaped, so it
 * can neither forge a log line nor hide what it is.
 */
export function escapeText(text: string): string {
  const cut = text.length > MAX_QUOTED ? text.slice(0, MAX_QUOTED) : text;
  const escaped = cut.replace(/[^\x20-\x26\x28-\x5b\x5d-\x7e]/g, escapeChar);
  return text.length > MAX_QUOTED ? `${escaped}…` : escaped;
}

/** A tenant id as messages and log lines quote it. */
export function describeTenant(tenantId: string): string {
  return `'${escapeText(String(tenantId))}'`;
}

/**
 * What kind of failure a resolver's error was, in a word the application cannot use to write into the message: the
 * error's `name` when it looks like a class name, else `Error`; the type for anything thrown that is no `Error`.
 */
export function describeFailure(cause: unknown): string {
  if (!(cause instanceof Error)) return cause === null ? 'null' : typeof cause;
  let name: unknown;
  try {
    name = cause.name;
  } catch {
    return 'Error';
  }
  return typeof name === 'string' && ERROR_NAME.test(name) ? name : 'Error';
}
