import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { SharedStoreStatus } from '../token/token-status.types.js';

/** After a failed operation the store is left alone this long, so a frozen Redis costs one timeout, not one a call. */
const UNAVAILABLE_PROBE_MS = 1_000;

/** In the order `status()` names them when both apply. */
const ENTRY_PROBLEMS = ['unreadable-entry', 'lock-held'] as const;
type EntryProblem = (typeof ENTRY_PROBLEMS)[number];

/**
 * Whether one replica can use the shared store right now, and why not: for `status().sharedStore`, for the pause after
 * a failure (on the injected clock), and for the log, which gets one line when the store fails and one when it
 * answers again.
 */
export class SharedStoreHealth {
  /** The store failed: not asked again before `retryAt` (the clock's time). */
  private failure?: { readonly problem: string; readonly since: number; retryAt: number };
  /** The store answers, but its entries do not help: unreadable, or a lock held past its lease; since when. */
  private readonly entries = new Map<EntryProblem, number>();
  private closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Pick<LoggerService, 'log' | 'warn'>,
    private readonly mode: SharedStoreStatus['mode'],
  ) {}

  /** Whether to ask the store now: not closed, and not within the pause after a failure. */
  mayAsk(): boolean {
    return !this.closed && (this.failure === undefined || this.clock.now() >= this.failure.retryAt);
  }

  /** An operation failed: `problem` names it (an error's first word or code, `timeout`); logged on the first. */
  failed(problem: string, said: string): void {
    if (this.closed) return;
    const now = this.clock.now();
    if (this.failure === undefined) {
      this.logger.warn(
        `Token store unavailable (${said}); exchanging tokens locally until it answers again. Requests are not affected.`,
      );
      this.failure = { problem, since: now, retryAt: now + UNAVAILABLE_PROBE_MS };
    } else {
      this.failure.retryAt = now + UNAVAILABLE_PROBE_MS;
    }
  }

  answered(): void {
    if (this.failure === undefined) return;
    this.failure = undefined;
    if (!this.closed) this.logger.log('Token store answers again; tokens are shared across replicas again.');
  }

  /** The store answered with an entry no key here opens, or the wait for the lock's holder ran out. */
  entryProblem(problem: EntryProblem): void {
    if (this.entries.has(problem)) return;
    if (problem === 'unreadable-entry') {
      this.logger.warn(
        'The token store holds an entry this replica cannot open (another encryption key, tampered, or oversized); exchanging locally. Requests are not affected.',
      );
    }
    this.entries.set(problem, this.clock.now());
  }

  /**
   * What worked again: `unreadable-entry` once a stored token opens (or this replica's replaced it), `lock-held` once
   * the lock was taken here or its holder shared a token.
   */
  resolved(problem: EntryProblem): void {
    this.entries.delete(problem);
  }

  close(): void {
    this.closed = true;
  }

  status(): SharedStoreStatus {
    const { mode } = this;
    if (this.closed) return { state: 'closed', mode };
    const [entry] = [...this.entries].sort(([a], [b]) => ENTRY_PROBLEMS.indexOf(a) - ENTRY_PROBLEMS.indexOf(b));
    const problem = this.failure ?? (entry && { problem: entry[0], since: entry[1] });
    if (!problem) return { state: 'shared', mode };
    return { state: 'degraded', mode, problem: problem.problem, since: new Date(problem.since) };
  }
}
