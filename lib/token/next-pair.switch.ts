import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { CredentialsHolder } from '../credentials/credentials.holder.js';
import type { LoadedCredentials } from '../credentials/credentials.loader.js';
import { AssertionSigner, type SignerSettings } from './assertion.signer.js';
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

/** Seam of the exchange: the next pair, when there is one, to try at once after a "not registered" refusal. */
export interface NextPairFallback {
  candidate(): NextPairCandidate | undefined;
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

/**
 * Switches the process to the next pair when the platform accepts it after refusing the current one as not
 * registered: promotes it in the holder, logs one warning naming both thumbprints' prefixes, tells the observer
 * (telemetry) and keeps the record `status()` and health show.
 */
export class NextPairSwitch implements NextPairFallback {
  private last?: PairSwitchRecord;

  constructor(
    private readonly settings: SignerSettings,
    private readonly clock: Clock,
    private readonly holder: CredentialsHolder,
    private readonly observer: PlatformAuthObserver,
    private readonly logger: LoggerService,
  ) {}

  get lastSwitch(): PairSwitchRecord | undefined {
    return this.last;
  }

  /** Forgets the switch once the files say the same as the process (they were promoted). */
  filesCaughtUp(): void {
    this.last = undefined;
  }

  candidate(): NextPairCandidate | undefined {
    const next: LoadedCredentials | undefined = this.holder.next;
    if (!next) return undefined;
    const view = new CredentialsHolder(this.holder.active.machineId, next, this.clock.now());
    return {
      signer: new AssertionSigner(this.settings, this.clock, view),
      thumbprint: next.thumbprint,
      accepted: () => this.accepted(next),
    };
  }

  private accepted(next: LoadedCredentials): void {
    const previous = this.holder.promote(next, this.clock.now());
    if (!previous) return; // another exchange promoted it already, or a reload replaced it
    this.last = { atMs: this.clock.now(), from: previous.thumbprint, to: next.thumbprint };
    this.logger.warn(
      `The platform refused the current certificate (thumbprint ${thumbprintPrefix(previous.thumbprint)}) as not registered and accepted the next one (thumbprint ${thumbprintPrefix(next.thumbprint)}), which is now in use. Update the files: the next pair becomes the current pair (privateKey*/certificate*), and next* holds a new next pair or nothing.`,
    );
    this.observer.credentialsChanged('switched');
  }
}
