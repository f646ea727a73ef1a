import { createHash, randomBytes } from 'node:crypto';
import { ExpiringMap } from './emulator.expiring-map.js';

interface IssuedToken {
  readonly machineId: string;
  readonly expiresAt: number;
  revoked: boolean;
}

/** What the inspector may show of an issued token: never the token, only a short hash of it. */
export interface IssuedTokenSummary {
  /** The first 12 hex characters of the token's SHA-256. */
  readonly id: string;
  readonly machineId: string;
  readonly expiresAt: number;
  readonly state: 'active' | 'expired' | 'revoked';
}

type BearerCheck = { readonly ok: true; readonly machineId: string } | { readonly ok: false; readonly reason: string };

/** Access tokens the emulator issued: opaque random strings, checked by the placeholder routes. */
export class AccessTokenStore {
  private readonly tokens: ExpiringMap<IssuedToken>;

  /** `now` is emulator time in ms. */
  constructor(private readonly now: () => number) {
    this.tokens = new ExpiringMap(now);
  }

  issue(machineId: string, lifetimeSeconds: number): string {
    const accessToken = randomBytes(32).toString('base64url');
    this.tokens.set(accessToken, { machineId, expiresAt: this.now() + lifetimeSeconds * 1000, revoked: false });
    return accessToken;
  }

  check(accessToken: string): BearerCheck {
    const token = this.tokens.get(accessToken);
    if (!token) return { ok: false, reason: 'the access token was not issued by this platform (or expired long ago)' };
    if (token.revoked) return { ok: false, reason: 'the access token has been revoked' };
    const now = this.now();
    if (token.expiresAt <= now) {
      return {
        ok: false,
        reason: `the access token expired at ${new Date(token.expiresAt).toISOString()}; platform time is ${new Date(now).toISOString()}`,
      };
    }
    return { ok: true, machineId: token.machineId };
  }

  /** True when the token was usable and no longer is. */
  revoke(accessToken: string): boolean {
    const token = this.tokens.get(accessToken);
    if (!token || token.revoked || token.expiresAt <= this.now()) return false;
    token.revoked = true;
    return true;
  }

  /** How many usable tokens were revoked. */
  revokeAll(): number {
    const now = this.now();
    let revoked = 0;
    for (const token of this.tokens.values()) {
      if (token.revoked || token.expiresAt <= now) continue;
      token.revoked = true;
      revoked += 1;
    }
    return revoked;
  }

  /** Every token still remembered, latest expiry first. */
  list(): IssuedTokenSummary[] {
    const now = this.now();
    return [...this.tokens.keyed()]
      .map(([accessToken, token]) => ({
        id: shortHash(accessToken),
        machineId: token.machineId,
        expiresAt: token.expiresAt,
        state: token.revoked
          ? ('revoked' as const)
          : token.expiresAt <= now
            ? ('expired' as const)
            : ('active' as const),
      }))
      .sort((a, b) => b.expiresAt - a.expiresAt);
  }

  /** Revokes the token whose short hash is `id`; true when it was usable. */
  revokeById(id: string): boolean {
    for (const accessToken of this.tokens.keyed()) {
      if (shortHash(accessToken[0]) === id) return this.revoke(accessToken[0]);
    }
    return false;
  }
}

function shortHash(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest('hex').slice(0, 12);
}
