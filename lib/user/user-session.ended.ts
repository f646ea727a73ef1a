import type { Clock } from '../platform-auth.clock.js';
import { MAX_ENDED_SESSIONS } from './platform-user-auth.constants.js';

/**
 * The sessions that ended here (logout) before their cookie did, each until the session's own end. A copied cookie
 * of such a session is refused by this process: it neither works nor refreshes. Replicas do not share this; what
 * ends the session everywhere is the revocation of its refresh token at the server, which logout also does when the
 * server has a revocation endpoint. Bounded: past the limit, the entries
 * ending soonest go first.
 */
export class EndedSessions {
  private readonly ended = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly limit = MAX_ENDED_SESSIONS,
  ) {}

  end(sessionId: string, until: Date): void {
    if (until.getTime() <= this.clock.now()) return;
    this.ended.set(sessionId, until.getTime());
    if (this.ended.size > this.limit) this.sweep();
  }

  has(sessionId: string): boolean {
    const until = this.ended.get(sessionId);
    if (until === undefined) return false;
    if (until > this.clock.now()) return true;
    this.ended.delete(sessionId);
    return false;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [id, until] of this.ended) if (until <= now) this.ended.delete(id);
    if (this.ended.size <= this.limit) return;
    // Down to nine tenths, so a full map sorts once per many logouts, not once per logout.
    const excess = this.ended.size - Math.floor(this.limit * 0.9);
    const soonest = [...this.ended].sort((a, b) => a[1] - b[1]).slice(0, excess);
    for (const [id] of soonest) this.ended.delete(id);
  }
}
