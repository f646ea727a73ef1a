import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform-auth.clock.js';
import { AssertionSigningError } from '../platform-auth.errors.js';
import type { PlatformAuthSettings } from '../options/options.resolver.js';
import type { ActiveCredentials, CredentialsInUse } from '../credentials/active-credentials.js';
import { signCompactJws } from '../credentials/compact-jws.util.js';

/** What the signer reads of the settings. */
export type SignerSettings = Pick<PlatformAuthSettings, 'audience' | 'clockMarginSeconds' | 'assertionLifetimeSeconds'>;

/** The claims of a client assertion, exactly those of docs/platform-contract.md#claims, in that order. */
interface AssertionClaims {
  jti: string;
  iss: string;
  sub: string;
  aud: string;
  iat: number;
  nbf: number;
  exp: number;
}

/**
 * The configured margin, but never more than half the assertion's lifetime: the assertion must still lie as far
 * ahead of now as it reaches back, or a short lifetime would make it expired on arrival.
 */
export function effectiveClockMargin(
  config: Pick<PlatformAuthSettings, 'clockMarginSeconds' | 'assertionLifetimeSeconds'>,
): number {
  return Math.min(config.clockMarginSeconds, Math.floor(config.assertionLifetimeSeconds / 2));
}

/** The assertion's header, exactly; the same bytes whatever holds the key. */
export const PROTECTED_HEADER = { alg: 'RS256', typ: 'JWT' } as const;
const encoder = new TextEncoder();

/**
 * Builds and signs the client assertion (docs/platform-contract.md#assertion) exchanged for an access token. Key,
 * thumbprint and machineId come from the module's credentials at each call, so a reload or rotation applies from the
 * next assertion. Inject it (`AssertionSigner`, or `@InjectAssertionSigner(name)`); the module builds it.
 */
export class AssertionSigner {
  readonly #settings: SignerSettings;
  readonly #clock: Clock;
  readonly #holder: CredentialsInUse;

  /** @internal Only the credential lifecycle builds one; apps get it from the container. */
  constructor(settings: SignerSettings, clock: Clock, holder: CredentialsInUse) {
    this.#settings = settings;
    this.#clock = clock;
    this.#holder = holder;
  }

  /**
   * A fresh compact JWT, signed RS256 by the configured key: the PEM key parsed at start-up, the PKCS#11 token or the
   * signer (whose signature is verified against the certificate first). Never reuse one: each `jti` is single-use.
   */
  async createAssertion(
    options: {
      /** Platform clock minus local clock, in ms; added to the local time (clock-skew correction). */
      clockOffsetMs?: number;
    } = {},
  ): Promise<string> {
    // One read of the holder: claims and key of the same pair even if a swap happens meanwhile.
    const active = this.#holder.active;
    const claims = this.#claims(options.clockOffsetMs ?? 0, active);
    try {
      return await signCompactJws(active.credentials.key, PROTECTED_HEADER, encoder.encode(JSON.stringify(claims)));
    } catch (error) {
      // A token's or a signer's refusal already names the key and the likely cause.
      if (error instanceof AssertionSigningError) throw error;
      const { source, name } = active.credentials.key;
      const detail = error instanceof Error ? error.name : 'unknown error';
      throw new AssertionSigningError(`signing the client assertion failed (${detail})`, {
        reason: 'failed',
        keySource: source,
        key: name,
        detail,
      });
    }
  }

  /**
   * The claims of a new assertion: a fresh `jti`, `iat = nbf = now - margin`, `exp = iat + lifetime`. Back-dating
   * is what lets a platform whose clock is behind accept the assertion at all (with `iat = now`, even 0.5 s behind
   * is "not yet valid" there); keeping `exp - iat` at the lifetime keeps the platform's 300 s rule.
   */
  #claims(clockOffsetMs: number, { credentials, machineId }: ActiveCredentials): AssertionClaims {
    const now = Math.floor((this.#clock.now() + clockOffsetMs) / 1000);
    const issuedAt = now - effectiveClockMargin(this.#settings);
    return {
      jti: randomUUID(),
      iss: credentials.thumbprint,
      sub: machineId,
      aud: this.#settings.audience,
      iat: issuedAt,
      nbf: issuedAt,
      exp: issuedAt + this.#settings.assertionLifetimeSeconds,
    };
  }
}
