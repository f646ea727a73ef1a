import {
  evaluateClaimRules,
  firstFailure,
  type AssertionRule,
  type ClaimRuleId,
  type ClaimRuleVerdict,
} from './emulator.claim-rules.js';
import { ExpiringMap } from './emulator.expiring-map.js';
import type { IntegrationRegistry } from './emulator.registry.js';
import type { RegisteredIntegration, TokenRequestRule } from './emulator.types.js';

// The token endpoint's own refusals quote values the same way as the assertion rules.
export { quote } from './emulator.claim-rules.js';

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

type AssertionVerdict = DecodedAssertion & {
  /** Every rule's verdict, once the assertion could be decoded. */
  readonly rules?: readonly ClaimRuleVerdict[];
} & (
    | { readonly ok: true; readonly integration: RegisteredIntegration }
    | (TokenRejection & { readonly integration?: RegisteredIntegration })
  );

interface AssertionVerifierSettings {
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
/** The OAuth error each assertion rule answers with (RFC 6749 §5.2; see docs/emulator.md for why). */
const RULE_ERRORS: Readonly<Record<AssertionRule, OAuthErrorCode>> = {
  alg: 'invalid_request',
  typ: 'invalid_request',
  claims: 'invalid_request',
  iss: 'invalid_client',
  signature: 'invalid_client',
  sub: 'invalid_client',
  status: 'unauthorized_client',
  aud: 'invalid_grant',
  lifetime: 'invalid_grant',
  'nbf-before-iat': 'invalid_grant',
  expired: 'invalid_grant',
  'not-yet-valid': 'invalid_grant',
  'jti-replay': 'invalid_grant',
};
/** Until these hold, the sender is not known to hold the integration's key. */
const AUTHENTICATING_RULES: readonly ClaimRuleId[] = ['alg', 'typ', 'claims', 'iss', 'signature'];

/**
 * Checks a client assertion against every rule of docs/platform-contract.md#assertion (`evaluateClaimRules`) and answers with the first rule
 * broken, in the fixed order of `CLAIM_RULE_ORDER`; the verdict of every rule travels with the answer.
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
    const { registry } = this.settings;
    const rules = await evaluateClaimRules(decoded, {
      audience: this.settings.audience,
      now: this.settings.now(),
      leewayMs: this.settings.leewayMs,
      thumbprintAlgorithm: registry.thumbprintAlgorithm,
      findIssuer: (iss) => {
        const entry = registry.findByIssuer(iss);
        return entry && { ...entry.integration, publicKey: entry.publicKey };
      },
      jtiSeen: (jti) => this.seenJtis.get(jti) !== undefined,
    });
    const parts = { header: decoded.header, claims: decoded.claims, rules };
    const authenticated = AUTHENTICATING_RULES.every((id) => rules.find((rule) => rule.rule === id)?.outcome === 'ok');
    // A client must build a new assertion for every attempt, so a genuine one is remembered whatever the verdict:
    // sending it twice is a replay even if the first attempt was refused.
    const claims = decoded.claims as { iss: string; jti: string; exp: number };
    if (authenticated) this.remember(claims);
    const integration = authenticated ? registry.findByIssuer(claims.iss)?.integration : undefined;
    const failed = firstFailure(rules);
    if (!failed) return { ok: true, ...parts, integration: integration! };
    return { ...parts, integration, ...tokenRejection(failed.rule, RULE_ERRORS[failed.rule], failed.message) };
  }

  private remember({ jti, exp }: { jti: string; exp: number }): void {
    const known = this.seenJtis.get(jti);
    this.seenJtis.set(jti, { expiresAt: Math.max(exp * 1000, known?.expiresAt ?? 0) });
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

export function tokenRejection(rule: TokenRequestRule, error: OAuthErrorCode, description: string): TokenRejection {
  return { ok: false, rule, error, description };
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
