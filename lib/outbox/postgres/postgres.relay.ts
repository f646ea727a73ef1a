import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../index.js';
import { claimRows, renewLease, settleRows, type Claim, type ClaimedRow, type Settlement } from './postgres.claim.js';
import type { PostgresExecutor, SqlSession } from './postgres.executor.js';
import type { OutboxSchema } from './postgres.schema.js';

/** What the sink made of a row: sent (delete it), due again at `retryAt`, or given up on with a reason. */
type RelaySinkOutcome =
  'done' | { readonly retryAt: number; readonly reason: string } | { readonly deadLetter: string };

/**
 * Hands one claimed row on (to the queue, or to the platform). A sink that throws leaves the row leased: it is
 * claimed again once the lease runs out.
 */
export type RelaySink = (row: ClaimedRow) => Promise<RelaySinkOutcome>;

/** Where a failure the relay rides out happened: it goes on after each. */
type RelayStep = 'claim' | 'sink' | 'settle' | 'renew' | 'listen';

interface PostgresRelayOptions {
  readonly executor: PostgresExecutor;
  readonly schema: OutboxSchema;
  readonly sink: RelaySink;
  /** The time of leases, due rows and the poll; default the system clock. */
  readonly clock?: Clock;
  /** Rows one claim takes at most (default 100). */
  readonly batchSize?: number;
  /** Sink calls at once (default 16). */
  readonly concurrency?: number;
  /** How long a claim holds its rows without renewal (default 60000 ms; renewed every third of it). */
  readonly leaseMs?: number;
  /** How often an idle relay looks for committed rows nobody announced (default 1000 ms). */
  readonly pollIntervalMs?: number;
  /** LISTEN for the inserts' notifications too, where the executor can (default false). */
  readonly listen?: boolean;
  /** This relay's name in the leases (default a new UUID): two relays must never share one. */
  readonly id?: string;
  readonly onError?: (error: unknown, step: RelayStep) => void;
}

/** What the relay did since it was made. */
interface RelayCounts {
  claimed: number;
  sent: number;
  retried: number;
  deadLettered: number;
  /** Outcomes not written: another relay had claimed the row after this one's lease ran out. */
  lost: number;
}

function settlementOf(seq: string, outcome: RelaySinkOutcome): Settlement {
  if (outcome === 'done') return { seq, outcome: 'done' };
  if ('deadLetter' in outcome) return { seq, outcome: 'dead', reason: outcome.deadLetter };
  return { seq, outcome: 'retry', retryAt: outcome.retryAt, reason: outcome.reason };
}

/**
 * Moves committed rows on: claims a batch under a lease, hands each row to the sink (`concurrency` at once) and
 * settles each outcome, fenced by the lease, as it comes (outcomes that arrive while a settlement is written go in
 * the next one). It claims again at once while claims find rows, and otherwise waits for `notify()`, a
 * notification or the poll.
 */
export class PostgresRelay {
  readonly id: string;
  readonly counts: RelayCounts = { claimed: 0, sent: 0, retried: 0, deadLettered: 0, lost: 0 };
  readonly #options: PostgresRelayOptions;
  readonly #clock: Clock;
  readonly #pool: SqlSession;
  readonly #batchSize: number;
  readonly #leaseMs: number;
  #running = false;
  #loop?: Promise<void>;
  #woken = false;
  #wake?: () => void;
  #after?: string;
  #unlisten?: () => Promise<void>;

  constructor(options: PostgresRelayOptions) {
    this.#options = options;
    this.id = options.id ?? randomUUID();
    this.#clock = options.clock ?? systemClock;
    this.#pool = { query: (sql, parameters) => options.executor.query(sql, parameters) };
    this.#batchSize = options.batchSize ?? 100;
    this.#leaseMs = options.leaseMs ?? 60_000;
  }

  /** Starts relaying; resolves once the LISTEN (when asked for) is in place. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.#listen();
    this.#loop = this.#run();
  }

  /** Look for committed rows now: call it after a commit that stored messages. */
  notify(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Stops claiming, lets the rows in hand reach their sink and be settled, then stops listening. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    await this.#unlisten?.().catch((error: unknown) => this.#report(error, 'listen'));
    this.#unlisten = undefined;
  }

  /** One claim, its sink calls and their settlement; the number of rows claimed. */
  async relayOnce(): Promise<number> {
    const claim = await claimRows(this.#pool, this.#options.schema, {
      relay: this.id,
      now: this.#clock.now(),
      leaseMs: this.#leaseMs,
      limit: this.#batchSize,
      after: this.#after,
    });
    if (!claim) return 0;
    this.#after = claim.lastOwner;
    this.counts.claimed += claim.rows.length;
    await this.#deliver(claim);
    return claim.rows.length;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      this.#woken = false;
      const claimed = await this.relayOnce().catch((error: unknown) => {
        this.#report(error, 'claim');
        return 0;
      });
      if (this.#running && claimed === 0 && !this.#woken) await this.#idle();
    }
  }

  /** Until `notify()`, a notification, the poll or `stop()`; a LISTEN that was lost is tried again first. */
  async #idle(): Promise<void> {
    if (this.#options.listen && !this.#unlisten) await this.#listen();
    await new Promise<void>((resolve) => {
      const cancel = this.#schedule(this.#options.pollIntervalMs ?? 1_000, () => this.#wake?.());
      this.#wake = () => {
        this.#wake = undefined;
        cancel();
        resolve();
      };
      if (this.#woken || !this.#running) this.#wake();
    });
  }

  async #listen(): Promise<void> {
    const { executor, schema, listen } = this.#options;
    if (!listen || !executor.listen) return;
    try {
      this.#unlisten = await executor.listen(schema.channel, {
        notified: () => this.notify(),
        lost: (error) => {
          this.#unlisten = undefined;
          this.#report(error, 'listen');
        },
      });
    } catch (error) {
      this.#report(error, 'listen');
    }
  }

  async #deliver(claim: Claim): Promise<void> {
    const held = new Set(claim.rows.map((row) => row.seq));
    const stopRenewing = this.#renewWhileHeld(claim, held);
    const settler = this.#settler(claim, held);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < claim.rows.length) {
        const row = claim.rows[next++];
        try {
          settler.add(settlementOf(row.seq, await this.#options.sink(row)));
        } catch (error) {
          held.delete(row.seq);
          this.#report(error, 'sink');
        }
      }
    };
    const workers = Math.min(this.#options.concurrency ?? 16, claim.rows.length);
    await Promise.all(Array.from({ length: workers }, worker));
    await settler.drained();
    stopRenewing();
  }

  /** Renews the lease of the rows not yet settled every third of it; a row it no longer holds is dropped. */
  #renewWhileHeld(claim: Claim, held: Set<string>): () => void {
    const schedule = (ms: number, callback: () => void): (() => void) => this.#schedule(ms, callback);
    let cancel = schedule(this.#leaseMs / 3, renew);
    const clock = this.#clock;
    const pool = this.#pool;
    const { schema } = this.#options;
    const leaseMs = this.#leaseMs;
    const report = (error: unknown): void => this.#report(error, 'renew');
    function renew(): void {
      if (held.size === 0) return;
      const seqs = [...held];
      cancel = schedule(leaseMs / 3, renew);
      renewLease(pool, schema, claim.lease, seqs, clock.now() + leaseMs).then((kept) => {
        for (const seq of seqs) if (!kept.has(seq)) held.delete(seq);
      }, report);
    }
    return () => {
      held.clear();
      cancel();
    };
  }

  /** Writes settlements as they come, one statement at a time, the ones that arrive meanwhile in the next. */
  #settler(claim: Claim, held: Set<string>): { add(settlement: Settlement): void; drained(): Promise<void> } {
    const queue: Settlement[] = [];
    let writing: Promise<void> | undefined;
    const write = async (): Promise<void> => {
      while (queue.length > 0) {
        const batch = queue.splice(0);
        const settled = await settleRows(this.#pool, this.#options.schema, claim.lease, batch, this.#clock.now()).catch(
          (error: unknown) => {
            this.#report(error, 'settle');
            return undefined;
          },
        );
        for (const settlement of batch) {
          held.delete(settlement.seq);
          // Unwritten (the database did not answer): the row stays leased and is claimed again after its lease.
          if (!settled) continue;
          if (!settled.has(settlement.seq)) this.counts.lost += 1;
          else if (settlement.outcome === 'done') this.counts.sent += 1;
          else if (settlement.outcome === 'retry') this.counts.retried += 1;
          else this.counts.deadLettered += 1;
        }
      }
      writing = undefined;
    };
    return {
      add(settlement) {
        queue.push(settlement);
        writing ??= write();
      },
      drained: async () => {
        while (writing) await writing;
      },
    };
  }

  /** A timer on the relay's clock, or a real one (unref'd) for a clock that has none. */
  #schedule(ms: number, callback: () => void): () => void {
    return (this.#clock.schedule ? this.#clock : systemClock).schedule!(ms, callback);
  }

  #report(error: unknown, step: RelayStep): void {
    this.#options.onError?.(error, step);
  }
}
