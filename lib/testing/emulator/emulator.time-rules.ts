import { MAX_ASSERTION_LIFETIME_SECONDS as MAX } from './emulator.constants.js';
import type { ClaimRuleId, ClaimRuleOutcome, ClaimRuleVerdict } from './emulator.claim-rules.js';

/** One rule's verdict; the values are left out where the rule has none to show. */
export function verdict(
  rule: ClaimRuleId,
  outcome: ClaimRuleOutcome,
  message: string,
  values: Pick<ClaimRuleVerdict, 'expected' | 'received' | 'differenceSeconds'> = {},
): ClaimRuleVerdict {
  return { rule, outcome, ...values, message };
}

/**
 * `iat`, the two spans and the two clock rules (`exp` and `nbf` with `leewayMs` of tolerance); a rule whose claims are
 * not NumericDates is not checked.
 */
export function timeRules(claims: Record<string, unknown>, now: number, leewayMs: number): ClaimRuleVerdict[] {
  const iat = numericDate(claims.iat);
  const nbf = numericDate(claims.nbf);
  const exp = numericDate(claims.exp);
  const clock = `the clock, ${isoTime(now)}`;
  const toClock = (seconds: number) => Math.round(seconds * 1000 - now) / 1000;
  const notChecked = (rule: ClaimRuleId, names: string) =>
    verdict(rule, 'not-checked', `${names} must be NumericDates to check this rule`);
  const span = (rule: 'lifetime' | 'nbf-before-iat', seconds: number, failure: string) =>
    verdict(rule, seconds <= MAX ? 'ok' : 'failed', seconds <= MAX ? `${seconds} s (at most ${MAX} s)` : failure, {
      expected: `at most ${MAX} s`,
      received: `${seconds} s`,
      differenceSeconds: seconds,
    });

  return [
    iat === undefined
      ? notChecked('iat', 'iat')
      : verdict('iat', 'ok', `iat is ${relative(toClock(iat))} the clock; the platform bounds it only by exp and nbf`, {
          expected: clock,
          received: isoTime(iat * 1000),
          differenceSeconds: toClock(iat),
        }),
    iat === undefined || exp === undefined
      ? notChecked('lifetime', 'iat and exp')
      : span('lifetime', exp - iat, `exp - iat is ${exp - iat} s; the JWT lifetime must not exceed ${MAX} s`),
    iat === undefined || nbf === undefined
      ? notChecked('nbf-before-iat', 'iat and nbf')
      : span('nbf-before-iat', iat - nbf, `nbf is ${iat - nbf} s before iat; at most ${MAX} s is allowed`),
    exp === undefined
      ? notChecked('expired', 'exp')
      : verdict(
          'expired',
          exp * 1000 + leewayMs > now ? 'ok' : 'failed',
          exp * 1000 + leewayMs > now
            ? `exp is ${relative(toClock(exp))} the clock`
            : `the JWT has expired: exp is ${isoTime(exp * 1000)}, platform time is ${isoTime(now)} (expired JWT, or client and platform clocks out of sync)`,
          { expected: `after ${clock}`, received: isoTime(exp * 1000), differenceSeconds: toClock(exp) },
        ),
    nbf === undefined
      ? notChecked('not-yet-valid', 'nbf')
      : verdict(
          'not-yet-valid',
          now + leewayMs >= nbf * 1000 ? 'ok' : 'failed',
          now + leewayMs >= nbf * 1000
            ? `nbf is ${relative(toClock(nbf))} the clock`
            : `the JWT is not valid yet: nbf is ${isoTime(nbf * 1000)}, platform time is ${isoTime(now)} (client and platform clocks out of sync)`,
          { expected: `at or before ${clock}`, received: isoTime(nbf * 1000), differenceSeconds: toClock(nbf) },
        ),
  ];
}

/** RFC 7519 §2: a JSON number of seconds, fractions allowed. */
export function numericDate(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function relative(seconds: number): string {
  if (seconds === 0) return 'exactly at';
  return seconds > 0 ? `${seconds} s after` : `${-seconds} s before`;
}

function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}
