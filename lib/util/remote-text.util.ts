export const REDACTED = '[REDACTED]';
/** Runs of base64url characters and dots: a JWT-shaped string is always inside one. */
const TOKEN_RUN = /[A-Za-z0-9_.-]+/g;
/** A JWT segment is at least this long. */
const MIN_JWT_SEGMENT = 8;
const MAX_REMOTE_TEXT = 300;
/**
 * Remote text is cut to this before any scanning, so a huge field costs next to nothing; it is far longer than the
 * 300 characters shown and than any secret the text might echo.
 */
const MAX_REMOTE_INPUT = 16 * 1024;
// eslint-disable-next-line no-control-regex -- control characters are what this removes
const WHITESPACE_AND_CONTROL = /[\s\u0000-\u001f\u007f]+/g;

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
 * Text from the platform (an `error_description`) is shown to users, so it is cut to a sane length, stripped of
 * control characters, and cleaned of anything secret it might echo back: the given values and JWT-shaped strings.
 * The input is bounded first and every step is linear, so remote text cannot stall the event loop.
 */
export function sanitizeRemoteText(text: unknown, secrets: readonly string[] = []): string | undefined {
  if (typeof text !== 'string') return undefined;
  let clean = text;
  if (clean.length > MAX_REMOTE_INPUT) {
    // The last word may be the start of a secret cut in two, which no longer matches it: drop that word.
    clean = clean.slice(0, MAX_REMOTE_INPUT);
    let end = clean.length;
    while (end > 0 && !/\s/.test(clean[end - 1])) end -= 1;
    clean = clean.slice(0, end);
  }
  for (const secret of secrets) if (secret) clean = clean.split(secret).join(REDACTED);
  clean = clean.replace(TOKEN_RUN, (run) => (isJwtShaped(run) ? REDACTED : run));
  clean = clean.replace(WHITESPACE_AND_CONTROL, ' ').trim();
  return clean.length > MAX_REMOTE_TEXT ? `${clean.slice(0, MAX_REMOTE_TEXT)}…` : clean;
}
