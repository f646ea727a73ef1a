import type { KeyObject } from 'node:crypto';
import { compactVerify, errors as joseErrors } from 'jose';
import { thumbprintFormatProblem } from '../../credentials/thumbprint.util.js';
import type { ThumbprintAlgorithm } from '../../options/platform-auth-options.interface.js';
import { ACTIVE_STATUS } from './emulator.registry.js';
import { numericDate, timeRules, verdict } from './emulator.time-rules.js';
import type { TokenRequestRule } from './emulator.types.js';

/** `iat` has no rule of its own (only `exp − iat` and `iat − nbf` bound it); its row shows it against the clock. */
export type ClaimRuleId =
  | 'alg'
  | 'typ'
  | 'claims'
  | 'iss'
  | 'signature'
  | 'sub'
  | 'status'
  | 'aud'
  | 'iat'
  | 'lifetime'
  | 'nbf-before-iat'
  | 'expired'
  | 'not-yet-valid'
  | 'jti-replay';

/** The order the token endpoint applies the rules in: the first one failed is the answer. */
export const CLAIM_RULE_ORDER = [
  'alg',
  'typ',
  'claims',
  'iss',
  'signature',
  'sub',
  'status',
  'aud',
  'iat',
  'lifetime',
  'nbf-before-iat',
  'expired',
  'not-yet-valid',
  'jti-replay',
  // Each is also a rule the token endpoint can refuse with (`iat` aside).
] as const satisfies readonly (ClaimRuleId & (TokenRequestRule | 'iat'))[];

/** A rule of docs/platform-contract.md#assertion on a decoded assertion; each is also the `rule` the token endpoint refuses with. */
export type AssertionRule = Exclude<ClaimRuleId, 'iat'>;

/** Short names for the rules, for tables and check lists. */
export const CLAIM_RULE_LABELS: Readonly<Record<ClaimRuleId, string>> = {
  alg: 'alg',
  typ: 'typ',
  claims: 'claims',
  iss: 'iss',
  signature: 'signature',
  sub: 'sub',
  status: 'status',
  aud: 'aud',
  iat: 'iat',
  lifetime: 'exp - iat',
  'nbf-before-iat': 'iat - nbf',
  expired: 'now < exp',
  'not-yet-valid': 'nbf <= now',
  'jti-replay': 'jti',
};

export type ClaimRuleOutcome = 'ok' | 'failed' | 'not-checked';

/** One rule's verdict on one assertion. Values are JSON, cut short; never the assertion itself. */
export interface ClaimRuleVerdict {
  readonly rule: ClaimRuleId;
  readonly outcome: ClaimRuleOutcome;
  /** What the rule requires. */
  readonly expected?: string;
  /** What the assertion carries. */
  readonly received?: string;
  /** Time rules: the claim minus the clock for `iat`, `expired` (exp) and `not-yet-valid` (nbf); the span for `lifetime` and `nbf-before-iat`. */
  readonly differenceSeconds?: number;
  /** Why it passed or failed; for a failure, the token endpoint's `error_description`. */
  readonly message: string;
}

interface DecodedJwt {
  readonly jwt: string;
  readonly header: Record<string, unknown>;
  readonly claims: Record<string, unknown>;
}

/** The system integration `iss` names, as far as the judge knows it. */
interface ClaimRuleIssuer {
  readonly thumbprint: string;
  readonly machineId: string;
  readonly publicKey: KeyObject;
  /** Left out where only the platform knows it (the CLI): the `status` rule is then not checked. */
  readonly status?: string;
}

interface ClaimRuleContext {
  /** The `aud` every assertion must carry. */
  readonly audience: string;
  /** The clock (ms) the time rules are judged by: the emulator's, or the local machine's for the CLI. */
  readonly now: number;
  /** Tolerance on `nbf` and `exp`, ms; default 0, strict. */
  readonly leewayMs?: number;
  readonly thumbprintAlgorithm: ThumbprintAlgorithm;
  /** The integration whose certificate thumbprint is `iss`, if any. */
  readonly findIssuer: (iss: string) => ClaimRuleIssuer | undefined;
  /** Whether the jti was presented before; left out where nobody can know, and the rule is then not checked. */
  readonly jtiSeen?: (jti: string) => boolean;
}

const STRING_CLAIMS = ['jti', 'iss', 'sub'] as const;
const NUMERIC_DATE_CLAIMS = ['iat', 'nbf', 'exp'] as const;

/**
 * Every rule of docs/platform-contract.md#assertion on a decoded assertion, each judged on its own (a rule whose input is missing is
 * `not-checked`), in `CLAIM_RULE_ORDER`. The signature is verified with jose against the issuer's key, never with
 * anything of the library's signer. Shared by the emulator's token endpoint, its inspector and `platform-auth
 * assertion`, so that there is one copy of each rule.
 */
export async function evaluateClaimRules(decoded: DecodedJwt, context: ClaimRuleContext): Promise<ClaimRuleVerdict[]> {
  const { header, claims } = decoded;
  const iss = typeof claims.iss === 'string' ? claims.iss : undefined;
  const issuer = iss === undefined ? undefined : context.findIssuer(iss);
  const verdicts: ClaimRuleVerdict[] = [
    headerRule('alg', header.alg, 'RS256'),
    headerRule('typ', header.typ, 'JWT'),
    claimTypesRule(claims),
    issuerRule(iss, issuer, context.thumbprintAlgorithm),
    await signatureRule(decoded.jwt, issuer),
    subjectRule(claims.sub, issuer),
    statusRule(issuer),
    audienceRule(claims.aud, context.audience),
    ...timeRules(claims, context.now, context.leewayMs ?? 0),
    replayRule(claims.jti, context.jtiSeen),
  ];
  return verdicts;
}

/** The first rule failed, in the order the token endpoint applies them. */
export function firstFailure(
  verdicts: readonly ClaimRuleVerdict[],
): (ClaimRuleVerdict & { readonly rule: AssertionRule }) | undefined {
  return verdicts.find(
    (verdict): verdict is ClaimRuleVerdict & { rule: AssertionRule } =>
      verdict.outcome === 'failed' && verdict.rule !== 'iat',
  );
}

function headerRule(rule: 'alg' | 'typ', value: unknown, required: string): ClaimRuleVerdict {
  const values = { expected: quote(required), received: quote(value) };
  return value === required
    ? verdict(rule, 'ok', required, values)
    : verdict(rule, 'failed', `the JWT header ${rule} is ${quote(value)}; the platform requires ${required}`, values);
}

/** Every missing or mistyped claim at once, so a client sees all of them in one round trip. */
function claimTypesRule(claims: Record<string, unknown>): ClaimRuleVerdict {
  const missing: string[] = [];
  const mistyped: string[] = [];
  for (const name of STRING_CLAIMS) {
    const value = claims[name];
    if (value === undefined) missing.push(name);
    else if (typeof value !== 'string' || value === '')
      mistyped.push(`${name} must be a non-empty string, got ${quote(value)}`);
  }
  if (claims.aud === undefined) missing.push('aud');
  else if (typeof claims.aud !== 'string' && !Array.isArray(claims.aud))
    mistyped.push(`aud must be a string, got ${quote(claims.aud)}`);
  for (const name of NUMERIC_DATE_CLAIMS) {
    const value = claims[name];
    if (value === undefined) missing.push(name);
    else if (numericDate(value) === undefined) {
      mistyped.push(`${name} must be a NumericDate (a number of seconds since the epoch), got ${quote(value)}`);
    }
  }
  const expected = 'jti, iss, sub non-empty strings; aud a string; iat, nbf, exp NumericDates';
  const problems = [...(missing.length > 0 ? [`missing required claim(s) ${missing.join(', ')}`] : []), ...mistyped];
  if (problems.length === 0) return verdict('claims', 'ok', `all 7 present: ${expected}`, { expected });
  return verdict('claims', 'failed', `${problems.join('; ')} (jti, iss, sub, aud, iat, nbf and exp are all required)`, {
    expected,
  });
}

function issuerRule(
  iss: string | undefined,
  issuer: ClaimRuleIssuer | undefined,
  algorithm: ThumbprintAlgorithm,
): ClaimRuleVerdict {
  if (iss === undefined) return verdict('iss', 'not-checked', 'iss is not a string');
  if (issuer) {
    return verdict('iss', 'ok', "iss is the registered certificate's thumbprint", {
      expected: quote(issuer.thumbprint),
      received: quote(iss),
    });
  }
  return verdict(
    'iss',
    'failed',
    `iss ${quote(iss)} is not the thumbprint of any registered certificate${thumbprintHint(iss, algorithm)}`,
    { expected: `the ${algorithm} thumbprint of a registered certificate`, received: quote(iss) },
  );
}

/** Verified by jose against the registered certificate's key, never by the library's own code. */
async function signatureRule(jwt: string, issuer: ClaimRuleIssuer | undefined): Promise<ClaimRuleVerdict> {
  const expected = 'RS256, by the certificate registered for iss';
  if (!issuer) return verdict('signature', 'not-checked', 'no registered certificate to verify it with', { expected });
  try {
    await compactVerify(jwt, issuer.publicKey, { algorithms: ['RS256'] });
    return verdict('signature', 'ok', 'verifies with the certificate registered for iss (RS256)', { expected });
  } catch (error) {
    const message =
      error instanceof joseErrors.JWSSignatureVerificationFailed
        ? 'the signature does not verify with the certificate registered for iss (signed with another key, or altered)'
        : `the signature could not be verified with the certificate registered for iss (${error instanceof joseErrors.JOSEError ? error.code : 'unexpected error'})`;
    return verdict('signature', 'failed', message, { expected });
  }
}

function subjectRule(sub: unknown, issuer: ClaimRuleIssuer | undefined): ClaimRuleVerdict {
  if (typeof sub !== 'string') return verdict('sub', 'not-checked', 'sub is not a string');
  if (!issuer) return verdict('sub', 'not-checked', 'no integration is registered for iss', { received: quote(sub) });
  const values = { expected: quote(issuer.machineId), received: quote(sub) };
  return sub === issuer.machineId
    ? verdict('sub', 'ok', 'sub is the machineId of the integration registered for iss', values)
    : verdict(
        'sub',
        'failed',
        `sub ${quote(sub)} is not the machineId of the integration whose certificate signed the assertion (wrong machineId)`,
        values,
      );
}

function statusRule(issuer: ClaimRuleIssuer | undefined): ClaimRuleVerdict {
  const expected = quote(ACTIVE_STATUS);
  if (!issuer) return verdict('status', 'not-checked', 'no integration is registered for iss', { expected });
  if (issuer.status === undefined) {
    return verdict('status', 'not-checked', "only the platform knows the integration's status", { expected });
  }
  const values = { expected, received: quote(issuer.status) };
  return issuer.status === ACTIVE_STATUS
    ? verdict('status', 'ok', `the system integration is ${ACTIVE_STATUS}`, values)
    : verdict(
        'status',
        'failed',
        `the system integration's status is ${quote(issuer.status)}; only an ${ACTIVE_STATUS} integration can authenticate`,
        values,
      );
}

function audienceRule(aud: unknown, audience: string): ClaimRuleVerdict {
  if (aud === undefined) return verdict('aud', 'not-checked', 'aud is missing', { expected: quote(audience) });
  const values = { expected: quote(audience), received: quote(aud) };
  if (aud === audience) return verdict('aud', 'ok', 'aud is the expected audience', values);
  const actual = Array.isArray(aud) ? `an array ${quote(aud)}` : quote(aud);
  return verdict(
    'aud',
    'failed',
    `aud is ${actual}; the platform expects the single string ${quote(audience)} (invalid audience)`,
    values,
  );
}

function replayRule(jti: unknown, jtiSeen: ((jti: string) => boolean) | undefined): ClaimRuleVerdict {
  const expected = 'a jti never presented before';
  if (typeof jti !== 'string') return verdict('jti-replay', 'not-checked', 'jti is not a string', { expected });
  if (!jtiSeen) {
    return verdict('jti-replay', 'not-checked', 'only the platform knows which jti it has seen', {
      expected,
      received: quote(jti),
    });
  }
  return jtiSeen(jti)
    ? verdict('jti-replay', 'failed', `jti ${quote(jti)} has been used before; every JWT needs a new jti`, {
        expected,
        received: quote(jti),
      })
    : verdict('jti-replay', 'ok', 'jti has not been presented before', { expected, received: quote(jti) });
}

/** Why an unknown `iss` may be a near miss: the usual mistakes in copying a thumbprint from the portal. */
function thumbprintHint(iss: string, algorithm: ThumbprintAlgorithm): string {
  if (/[:\s]/.test(iss)) return ' (it contains colons or spaces; the thumbprint is plain hex)';
  const problem = thumbprintFormatProblem(iss.toUpperCase(), algorithm);
  return problem ? ` (it ${problem})` : ' (the certificate is not registered, or the configured thumbprint is wrong)';
}

/** A claim value for a description: JSON, cut short so a hostile client cannot make the answer huge. */
export function quote(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = JSON.stringify(value) ?? `a ${typeof value}`;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
