import type { JobJson, Queue } from 'bullmq';
import type { BullMq } from './outbox.connection.js';
import { UNREADABLE, storedData } from './outbox.message.js';
import { failureReason } from './outbox.reasons.js';
import type { OutboxFailedJob, OutboxJob, StoredMessage } from './outbox.types.js';

/**
 * The queue's jobs as Redis holds them, read through BullMQ's `getJobData` (its record, the data unparsed), so that a
 * job written by something other than `enqueue`, whose data is not JSON, is listed as it is instead of stopping the
 * read: BullMQ's own getters parse every job they meet, and throw at the first such one.
 */

/** A job as the lists, the events and `reconcile` show it: its data as Redis holds it, listed, never sent unchecked. */
export function outboxJob(id: string, data: unknown, attemptsMade: number, enqueuedAt: number): OutboxJob {
  return {
    method: '',
    path: '',
    ...(typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as StoredMessage) : undefined),
    id,
    idempotencyKey: (data as Partial<StoredMessage> | undefined)?.idempotencyKey ?? id,
    attemptsMade,
    enqueuedAt,
  };
}

/** The records of `ids` with their ids, those gone (or whose options Redis holds garbled) left out. */
async function records(queue: Queue, ids: readonly string[]): Promise<(JobJson & { readonly id: string })[]> {
  const backend = queue.getBackend();
  const found = await Promise.all(
    ids.map((id) =>
      backend.getJobData(id).then(
        (record) => record && { ...record, id },
        () => undefined,
      ),
    ),
  );
  return found.filter((record) => record !== undefined);
}

/** The failed jobs, newest first, at most `max`: refused and dead-lettered alike, with their reasons. */
export async function failedJobs(queue: Queue, max: number): Promise<OutboxFailedJob[]> {
  const ids = await queue.getRanges(['failed'], 0, max - 1);
  return (await records(queue, ids)).map((record) => ({
    ...outboxJob(record.id, storedData(record.data), record.attemptsMade, record.timestamp),
    reason: failureReason(record.failedReason),
    failedAt: record.finishedOn,
  }));
}

/**
 * When the oldest of the first `look` jobs of each state not yet ended was enqueued: a look at a few jobs, whatever
 * the queue's depth (a job due later than those looked at may be older). `Infinity` when none is.
 */
export async function oldestEnqueuedAt(queue: Queue, look: number): Promise<number> {
  const ids = await queue.getRanges(['wait', 'prioritized', 'delayed', 'active'], 0, look - 1, true);
  return Math.min(...(await records(queue, [...new Set(ids)])).map((record) => record.timestamp));
}

/**
 * BullMQ's worker cannot read a job whose data is not JSON: it leaves it active, takes it back as stalled, and meets
 * it again, for ever. Such a job among the active ones gets the data `UNREADABLE` instead (BullMQ's `updateData`), so
 * the next worker to take it reads it, and refuses it as one `enqueue` would not store.
 */
export async function markUnreadable(bull: BullMq, queue: Queue): Promise<void> {
  const ids = await queue.getRanges(['active'], 0, -1);
  for (const record of await records(queue, ids)) {
    if (storedData(record.data) !== UNREADABLE) continue;
    await new bull.Job(queue, 'message', UNREADABLE, {}, record.id).updateData(UNREADABLE);
  }
}

/** The commands of a node-redis client (standalone, cluster or sentinel) the tally sends. */
interface TallyClient {
  zAdd(key: string, member: { score: number; value: string }): Promise<unknown>;
  zRem(key: string, member: string): Promise<unknown>;
  zCard(key: string): Promise<number>;
}

/**
 * The ids of the failed jobs that were refused (by the platform, or as not a message), beside BullMQ's failed set:
 * so `status()` tells refusals from dead letters by two counts, whatever the number of jobs, instead of reading
 * every failed job. A job is added once BullMQ has failed it and removed before `retry(id)` re-queues it; a process
 * that dies in between leaves a refusal counted as a dead letter, never the other way round.
 */
export class RefusalTally {
  readonly #client: TallyClient;
  readonly #key: string;

  constructor(client: object, queue: Queue) {
    this.#client = client as TallyClient;
    this.#key = queue.toKey('outbox:refused');
  }

  async add(id: string, at: number): Promise<void> {
    await this.#client.zAdd(this.#key, { score: at, value: id });
  }

  async remove(id: string): Promise<void> {
    await this.#client.zRem(this.#key, id);
  }

  async count(): Promise<number> {
    return Number(await this.#client.zCard(this.#key));
  }
}
