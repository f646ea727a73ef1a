/*
 * `Retry-After` (RFC 9110 §10.2.3) is delay-seconds or an HTTP-date, and an HTTP-date is one of exactly three forms
 * (§5.6.7). `Date.parse` accepts far more ("-5" and "1.5" are dates to it, long past), which turned junk into a
 * zero-delay retry storm; anything outside these forms is ignored and the normal back-off applies.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT`, the form senders must use. */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT`, obsolete. */
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994`, obsolete (C's asctime). */
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);
const DELAY_SECONDS = /^\d+$/;

function utc(
  year: number,
  month: string,
  day: string,
  hour: string,
  minute: string,
  second: string,
): number | undefined {
  const monthIndex = MONTHS.indexOf(month);
  const [d, h, m, s] = [day, hour, minute, second].map((part) => Number(part.trim()));
  if (h > 23 || m > 59 || s > 60) return undefined;
  const time = Date.UTC(year, monthIndex, d, h, m, Math.min(s, 59));
  // Date.UTC rolls 31 Nov over to 1 Dec; such a date is malformed, not next month.
  return new Date(time).getUTCDate() === d ? time : undefined;
}

/** An RFC 9110 HTTP-date as epoch ms, or `undefined`. */
function parseHttpDate(value: string, nowMs: number): number | undefined {
  let match = IMF_FIXDATE.exec(value);
  if (match) return utc(Number(match[3]), match[2], match[1], match[4], match[5], match[6]);
  match = RFC_850.exec(value);
  if (match) {
    // A two-digit year more than 50 years ahead is the most recent past year ending in those digits (§5.6.7).
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(match[3]);
    if (year > nowYear + 50) year -= 100;
    return utc(year, match[2], match[1], match[4], match[5], match[6]);
  }
  match = ASCTIME.exec(value);
  if (match) return utc(Number(match[6]), match[1], match[2], match[3], match[4], match[5]);
  return undefined;
}

/** `Retry-After` as a delay in ms; `undefined` when absent or not one of the RFC 9110 forms. */
export function parseRetryAfter(value: unknown, nowMs: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (DELAY_SECONDS.test(trimmed)) return Number(trimmed) * 1000;
  const date = parseHttpDate(trimmed, nowMs);
  return date === undefined ? undefined : Math.max(0, date - nowMs);
}
