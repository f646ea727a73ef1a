import type { KeyObject } from 'node:crypto';
import { compactVerify, errors as joseErrors } from 'jose';
import { thumbprintFormatProblem } from '../credentials/thumbprint.util.js';
import type { ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';
import { MAX_ASSERTION_LIFETIME_SECONDS } from './emulator.constants.js';
import { ExpiringMap } from './emulator.expiring-map.js';
import { ACTIVE_STATUS, type IntegrationRegistry } from './emulator.registry.js';
import type { RegisteredIntegration, TokenRequestRule } from './emulator.types.js';

/** RFC 6749 §5.2 error codes the token endpoint answers with. */
export type OAuthErrorCode =
  'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type';

export interface TokenRejection {
  readonly ok: false;
  readonly rule: TokenRequestRule;
  readonly error: OAuthErrorCode;
  readonly description: string;
}

export interface DecodedAssertion {
  readonly header?: Record<string, unknown>;
  readonly claims?: Record<string, unknown>;
}

export type AssertionVerdict = DecodedAssertion &
  (
    | { readonly ok: true; readonly integration: RegisteredIntegration }
    | (TokenRejection & { readonly integration?: RegisteredIntegration })
  );

export interface AssertionVerifierSettings {
  readonly registry: IntegrationRegistry;
  /** The `aud` every assertion must carry. */
  readonly audience: string;
  readonly acceptCompactJwt: boolean;
  readonly acceptBase64: boolean;
  /** Emulator time, ms. */
  readonly now: () => number;
  /** Tolerance on `nbf` and `exp`, ms; 0 is strict. */
  readonly leewayMs: number;
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;
const COMPACT_JWE = /^[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]*){4}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const STRING_CLAIMS = ['jti', 'iss', 'sub'] as const;
/** The claims once their types have been checked; `aud` may still be an array, which the `aud` rule refuses. */
interface AssertionClaimsShape {
  jti: string;
  iss: string;
  sub: string;
  aud: string | unknown[];
  iat: number;
  nbf: number;
  exp: number;
}
const NUMERIC_DATE_CLAIMS = ['iat', 'nbf', 'exp'] as const;

/**
 * Checks a client assertion against every rule of docs/platform-contract.md#assertion, in a fixed order (the one of
 * `TokenRequestRule`), and stops at the first rule broken. The signature is verified with jose against the
 * registered certificate's key, independently of the library's signer.
 */
export class AssertionVerifier {
  /** jti → the assertion's `exp`: an assertion is forgotten only once it could no longer be accepted anyway. */
  private readonly seenJtis: ExpiringMap<{ readonly expiresAt: number }>;

  constructor(private readonly settings: AssertionVerifierSettings) {
    this.seenJtis = new ExpiringMap(settings.now);
  }

  /** The assertion's header and claims without verifying anything: for the journal of a request a fault answers. */
  decode(tokenField: string): DecodedAssertion {
    const decoded = this.decodeAssertion(tokenField);
    return { header: decoded.header, claims: decoded.claims };
  }

  async verify(tokenField: string): Promise<AssertionVerdict> {
    const decoded = this.decodeAssertion(tokenField);
    if (!decoded.ok) return decoded;
    const { jwt, header, claims } = decoded;
    const parts = { header, claims };

    const formatProblem = checkHeader(header) ?? checkClaimTypes(claims);
    if (formatProblem) return { ...parts, ...formatProblem };
    const assertion = claims as unknown as AssertionClaimsShape;

    const entry = this.settings.registry.findByIssuer(assertion.iss);
    if (!entry) {
      const hint = thumbprintHint(assertion.iss, this.settings.registry.thumbprintAlgorithm);
      return {
        ...parts,
        ...tokenRejection(
          'iss',
          'invalid_client',
          `iss ${quote(assertion.iss)} is not the thumbprint of any registered certificate${hint}`,
        ),
      };
    }
    const signatureProblem = await verifySignature(jwt, entry.publicKey);
    if (signatureProblem) return { ...parts, ...signatureProblem };

    const replayed = this.remember(assertion);
    const integration = entry.integration;
    const problem = this.checkAuthenticated(assertion, integration, replayed);
    return problem ? { ...parts, integration, ...problem } : { ok: true, ...parts, integration };
  }

  /**
   * Records the jti, and says whether it was known. Done as soon as the signature is genuine, whatever the verdict:
   * a client must build a new assertion for every attempt, so sending one twice is a replay even if the first
   * attempt was refused.
   */
  private remember({ jti, exp }: AssertionClaimsShape): boolean {
    const known = this.seenJtis.get(jti);
    this.seenJtis.set(jti, { expiresAt: Math.max(exp * 1000, known?.expiresAt ?? 0) });
    return known !== undefined;
  }

  /** The rules for an assertion whose signature verified, in order. */
  private checkAuthenticated(
    { jti, sub, aud, iat, nbf, exp }: AssertionClaimsShape,
    integration: RegisteredIntegration,
    replayed: boolean,
  ): TokenRejection | undefined {
    if (sub !== integration.machineId) {
      return tokenRejection(
        'sub',
        'invalid_client',
        `sub ${quote(sub)} is not the machineId of the integration whose certificate signed the assertion (wrong machineId)`,
      );
    }
    if (integration.status !== ACTIVE_STATUS) {
      return tokenRejection(
        'status',
        'unauthorized_client',
        `the system integration's status is ${quote(integration.status)}; only an ${ACTIVE_STATUS} integration can authenticate`,
      );
    }
    if (aud !== this.settings.audience) {
      const actual = Array.isArray(aud) ? `an array ${quote(aud)}` : quote(aud);
      return tokenRejection(
        'aud',
        'invalid_grant',
        `aud is ${actual}; the platform expects the single string ${quote(this.settings.audience)} (invalid audience)`,
      );
    }
    if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) {
      return tokenRejection(
        'lifetime',
        'invalid_grant',
        `exp - iat is ${exp - iat} s; the JWT lifetime must not exceed ${MAX_ASSERTION_LIFETIME_SECONDS} s`,
      );
    }
    if (iat - nbf > MAX_ASSERTION_LIFETIME_SECONDS) {
      return tokenRejection(
        'nbf-before-iat',
        'invalid_grant',
        `nbf is ${iat - nbf} s before iat; at most ${MAX_ASSERTION_LIFETIME_SECONDS} s is allowed`,
      );
    }
    const now = this.settings.now();
    const leeway = this.settings.leewayMs;
    if (exp * 1000 + leeway <= now) {
      return tokenRejection(
        'expired',
        'invalid_grant',
        `the JWT has expired: exp is ${isoTime(exp * 1000)}, platform time is ${isoTime(now)} (expired JWT, or client and platform clocks out of sync)`,
      );
    }
    if (now + leeway < nbf * 1000) {
      return tokenRejection(
        'not-yet-valid',
        'invalid_grant',
        `the JWT is not valid yet: nbf is ${isoTime(nbf * 1000)}, platform time is ${isoTime(now)} (client and platform clocks out of sync)`,
      );
    }
    if (replayed) {
      return tokenRejection(
        'jti-replay',
        'invalid_grant',
        `jti ${quote(jti)} has been used before; every JWT needs a new jti`,
      );
    }
    return undefined;
  }

  private decodeAssertion(
    tokenField: string,
  ):
    | { ok: true; jwt: string; header: Record<string, unknown>; claims: Record<string, unknown> }
    | (TokenRejection & DecodedAssertion) {
    const unwrapped = this.unwrap(tokenField);
    if (!unwrapped.ok) return unwrapped;
    const [encodedHeader, encodedPayload] = unwrapped.jwt.split('.');
    const header = decodeJsonSegment(encodedHeader);
    if (!header)
      return tokenRejection('jwt-format', 'invalid_request', 'the JWT header is not a base64url-encoded JSON object');
    const claims = decodeJsonSegment(encodedPayload);
    if (!claims)
      return {
        header,
        ...tokenRejection('jwt-format', 'invalid_request', 'the JWT payload is not a base64url-encoded JSON object'),
      };
    return { ok: true, jwt: unwrapped.jwt, header, claims };
  }

  /** The compact JWT inside the `token` field, in whichever of the accepted forms it came. */
  private unwrap(tokenField: string): { ok: true; jwt: string } | TokenRejection {
    if (COMPACT_JWS.test(tokenField)) {
      if (this.settings.acceptCompactJwt) return { ok: true, jwt: tokenField };
      return tokenRejection(
        'token-encoding',
        'invalid_request',
        'token is a bare compact JWT; this platform expects it base64-encoded',
      );
    }
    if (BASE64.test(tokenField)) {
      const inner = Buffer.from(tokenField, 'base64').toString('utf8');
      if (!COMPACT_JWS.test(inner)) {
        return tokenRejection(
          'jwt-format',
          'invalid_request',
          'token is base64, but what it encodes is not a compact JWT (header.payload.signature)',
        );
      }
      if (this.settings.acceptBase64) return { ok: true, jwt: inner };
      return tokenRejection(
        'token-encoding',
        'invalid_request',
        'token is base64 of a JWT; this platform expects the compact JWT as is',
      );
    }
    if (COMPACT_JWE.test(tokenField)) {
      return tokenRejection(
        'jwt-format',
        'invalid_request',
        'token has five segments, an encrypted JWT (JWE); the platform expects a signed JWT (JWS)',
      );
    }
    return tokenRejection(
      'jwt-format',
      'invalid_request',
      'token is neither a compact JWT (header.payload.signature) nor base64 of one',
    );
  }
}

/** Verified by jose against the registered certificate's key, never by the library's own code. */
async function verifySignature(jwt: string, publicKey: KeyObject): Promise<TokenRejection | undefined> {
  try {
    await compactVerify(jwt, publicKey, { algorithms: ['RS256'] });
    return undefined;
  } catch (error) {
    const description =
      error instanceof joseErrors.JWSSignatureVerificationFailed
        ? 'the signature does not verify with the certificate registered for iss (signed with another key, or altered)'
        : `the signature could not be verified with the certificate registered for iss (${error instanceof joseErrors.JOSEError ? error.code : 'unexpected error'})`;
    return tokenRejection('signature', 'invalid_client', description);
  }
}

function checkHeader(header: Record<string, unknown>): TokenRejection | undefined {
  if (header.alg !== 'RS256') {
    return tokenRejection(
      'alg',
      'invalid_request',
      `the JWT header alg is ${quote(header.alg)}; the platform requires RS256`,
    );
  }
  if (header.typ !== 'JWT') {
    return tokenRejection(
      'typ',
      'invalid_request',
      `the JWT header typ is ${quote(header.typ)}; the platform requires JWT`,
    );
  }
  return undefined;
}

export function tokenRejection(rule: TokenRequestRule, error: OAuthErrorCode, description: string): TokenRejection {
  return { ok: false, rule, error, description };
}

/** Every missing or mistyped claim at once, so a client sees all of them in one round trip. */
function checkClaimTypes(claims: Record<string, unknown>): TokenRejection | undefined {
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
    else if (typeof value !== 'number' || !Number.isFinite(value)) {
      mistyped.push(`${name} must be a NumericDate (a number of seconds since the epoch), got ${quote(value)}`);
    }
  }
  const problems = [...(missing.length > 0 ? [`missing required claim(s) ${missing.join(', ')}`] : []), ...mistyped];
  if (problems.length === 0) return undefined;
  return tokenRejection(
    'claims',
    'invalid_request',
    `${problems.join('; ')} (jti, iss, sub, aud, iat, nbf and exp are all required)`,
  );
}

function decodeJsonSegment(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Why an unknown `iss` may be a near miss: the usual mistakes in copying a thumbprint from the portal. */
function thumbprintHint(iss: string, algorithm: ThumbprintAlgorithm): string {
  if (/[:\s]/.test(iss)) return ' (it contains colons or spaces; the thumbprint is plain hex)';
  const problem = thumbprintFormatProblem(iss.toUpperCase(), algorithm);
  return problem ? ` (it ${problem})` : ' (the certificate is not registered, or the configured thumbprint is wrong)';
}

/** A claim value for an error description: JSON, cut short so a hostile client cannot make the answer huge. */
export function quote(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = JSON.stringify(value) ?? `a ${typeof value}`;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}
