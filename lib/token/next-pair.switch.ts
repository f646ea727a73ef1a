import type { AssertionSigner } from './assertion.signer.js';
import type { AttemptFailure } from './token-exchange.client.js';

/**
 * The platform's answer that means "this certificate is not, or no longer, registered": `invalid_client` (HTTP 400
 * or 401, RFC 6749 §5.2) whose `error_description` names the thumbprint (`iss`) or the signature/certificate check,
 * and names nothing else the platform checks. docs/platform-contract.md's failure causes "wrong thumbprint" (`iss`
 * names no registered certificate) and "invalid certificate" (the signature does not verify against the registered
 * one) are the two a portal upload of another certificate produces. Anything else keeps the current pair: a
 * transient failure, a 429, a timeout, a clock problem (`exp`, `nbf`, `iat`), a wrong machineId (`sub`), a wrong
 * audience, an integration that is not Active, and a bare `invalid_client` without a description (it could be any
 * of these).
 */
export function isNotRegisteredRefusal(
  failure: Pick<AttemptFailure, 'oauthError' | 'status' | 'oauthErrorDescription'>,
): boolean {
  if (failure.oauthError !== 'invalid_client') return false;
  if (failure.status !== 400 && failure.status !== 401) return false;
  const description = failure.oauthErrorDescription ?? '';
  const namesCertificate = /\b(iss|thumbprint|signature|certificate)\b/i.test(description);
  const namesOther =
    /\b(sub|machine ?id|aud|audience|status|active|inactive|disabled|expired|exp|nbf|iat|not yet valid|clock|jti|replay)\b/i.test(
      description,
    );
  return namesCertificate && !namesOther;
}

/** What the exchange needs of the next pair: a signer over it, and what to do once the platform accepted it. */
export interface NextPairCandidate {
  readonly signer: Pick<AssertionSigner, 'createAssertion'>;
  readonly thumbprint: string;
  /** The platform accepted an assertion signed with it: it becomes the current pair for the process. */
  accepted(): void;
}

/**
 * What one exchange signs with: the current pair, and the next pair, when there is one, to try at once after a
 * "not registered" refusal. The credential lifecycle hands them out.
 */
export interface ExchangeSigners {
  readonly current: Pick<AssertionSigner, 'createAssertion'>;
  readonly next?: NextPairCandidate;
}

/** The last switch to the next pair, for `status()`. */
export interface PairSwitchRecord {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
}

/** Thumbprint prefix for messages: enough to tell two certificates apart, short enough to read. */
export function thumbprintPrefix(thumbprint: string): string {
  return `${thumbprint.slice(0, 8)}…`;
}
