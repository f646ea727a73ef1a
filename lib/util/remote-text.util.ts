/**
 * Text the library did not write (an `error_description` from the platform, an issuer, a tenant id from a request, a
 * resolver's error, a store's reason, a request path the proxy reports) is made fit for a terminal, a log line and a
 * JSON body here, and nowhere else: bounded, secrets and JWT-shaped strings taken out, and every character a
 * terminal or a viewer would act on or hide behind written as a visible escape.
 */
export const REDACTED = '[REDACTED]';
/** Runs of base64url characters and dots: a JWT-shaped string is always inside one. */
const TOKEN_RUN = /[A-Za-z0-9_.-]+/g;
/** A JWT segment is at least this long. */
const MIN_JWT_SEGMENT = 8;
/** Longest prose shown (a description, a reason); the rest is cut and marked with `…`. */
const MAX_PROSE = 300;
/** Longest name quoted in a message or log line (a tenant id, an error's text in a name's place). */
const MAX_NAME = 64;
/**
 * Outside text is cut to this before any scanning, so a huge field costs next to nothing; it is far longer than what
 * is shown and than any secret the text might echo.
 */
const MAX_INPUT = 16 * 1024;
/**
 * What is never shown as it is: the C0 and C1 controls and DEL (ESC, U+009B CSI and U+009D OSC start terminal
 * sequences), format characters (the bidi overrides and isolates U+202A–U+202E and U+2066–U+2069, zero-width
 * characters), line and paragraph separators, lone surrogates, private-use and unassigned code points; and the
 * backslash, so that no text can pass for one of these escapes.
 */
const UNSAFE = /[\p{C}\p{Zl}\p{Zp}\\]/gu;
/** In a quoted name, everything but printable ASCII is escaped too (look-alike letters, spaces of every kind). */
const UNSAFE_IN_NAME = /[^\x20-\x26\x28-\x5b\x5d-\x7e]/gu;

/** `\x9b`, `\u202e`, `\u{10ffff}`: a character as a reader sees it escaped in JavaScript; `\\` and `\'` for those two. */
function escapeCharacter(char: string): string {
  if (char === '\\' || char === "'") return `\\${char}`;
  const code = char.codePointAt(0)!;
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
}

/** Three dot-separated segments of at least 8 characters in a row: the shape of a JWT. */
function isJwtShaped(run: string): boolean {
  let longSegmentsInARow = 0;
  for (const segment of run.split('.')) {
    longSegmentsInARow = segment.length >= MIN_JWT_SEGMENT ? longSegmentsInARow + 1 : 0;
    if (longSegmentsInARow === 3) return true;
  }
  return false;
}

/**
 * The first 16 KiB of the text. The last word may be the start of a secret cut in two, which would no longer match
 * it: that word is dropped.
 */
function bounded(text: string): string {
  if (text.length <= MAX_INPUT) return text;
  const cut = text.slice(0, MAX_INPUT);
  let end = cut.length;
  while (end > 0 && !/\s/.test(cut[end - 1])) end -= 1;
  return cut.slice(0, end);
}

/** The text without the given secrets and JWT-shaped strings, in linear time. */
function redacted(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) if (secret) clean = clean.split(secret).join(REDACTED);
  return clean.replace(TOKEN_RUN, (run) => (isJwtShaped(run) ? REDACTED : run));
}

/** At most `max` characters (whole code points) with `unsafe` escaped, and `…` when the text was longer. */
function escapedAndCut(text: string, unsafe: RegExp, max: number): string {
  // 2 × max UTF-16 units hold at least max code points.
  const head = Array.from(text.slice(0, 2 * max))
    .slice(0, max)
    .join('');
  const escaped = head.replace(unsafe, escapeCharacter);
  return head.length < text.length ? `${escaped}…` : escaped;
}

/**
 * Prose from outside, as messages, logs and the CLI show it: bounded, cleaned of the given secrets and of anything
 * JWT-shaped, whitespace runs (line breaks included) made one space, every other control, format or separator
 * character escaped visibly (`\x1b`, `\x9b`, `\u202e`), and cut to 300 characters. Undefined for anything but a string.
 */
export function sanitizeRemoteText(text: unknown, secrets: readonly string[] = []): string | undefined {
  if (typeof text !== 'string') return undefined;
  const prose = redacted(bounded(text), secrets).replace(/\s+/g, ' ').trim();
  return escapedAndCut(prose, UNSAFE, MAX_PROSE);
}

/**
 * A name from outside (a tenant id, an error's text quoted in its place) fit for one line of a message between
 * quotes: the same rules as prose, except that every character outside printable ASCII, a quote and a backslash are
 * escaped (line breaks and look-alikes too: a name must read as exactly what it is), cut to 64 characters.
 */
export function escapeText(text: string): string {
  // Only what could be shown is scanned: a 5,000-character id costs what a 64-character one does.
  return escapedAndCut(redacted(text.slice(0, 4 * MAX_NAME), []), UNSAFE_IN_NAME, MAX_NAME);
}

/** A tenant id as messages and log lines quote it. */
export function describeTenant(tenantId: string): string {
  return `'${escapeText(String(tenantId))}'`;
}

/** A name an error class may have: anything else a resolver's error calls itself is not repeated. */
const ERROR_NAME = /^[A-Za-z_$][\w$]{0,63}$/;

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
