import { randomBytes } from 'node:crypto';
import { ExpiringMap } from './emulator.expiring-map.js';

interface IssuedToken {
  readonly machineId: string;
  readonly expiresAt: number;
  revoked: boolean;
}

export type BearerCheck =
  { readonly ok: true; readonly machineId: string } | { readonly ok: false; readonly reason: string };

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
}
