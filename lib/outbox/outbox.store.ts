import type { OutboxQueue } from './outbox.connection.js';
import type { StoredMessage } from './outbox.types.js';

/** What a job is given at `enqueue`: its id, and its attempts and retention from the outbox's settings. */
interface StoreOptions {
  readonly id: string;
  readonly attempts: number;
  readonly keepSentMs: number;
}

/**
 * Adds `stored` as the job `id` unless the id is taken, and returns the data the job under `id` then holds, as the
 * JSON Redis keeps (`null` if it is gone already). BullMQ answers a taken id as it answers a new one and leaves the
 * job it holds unchanged: only its data tells whether this request is the one stored.
 */
export async function storeJob(
  queue: OutboxQueue,
  stored: StoredMessage,
  options: StoreOptions,
): Promise<string | null> {
  const { id, attempts, keepSentMs } = options;
  await queue.add('message', stored, {
    jobId: id,
    attempts,
    backoff: { type: 'outbox' },
    removeOnComplete: { age: Math.ceil(keepSentMs / 1000) },
    removeOnFail: false,
  });
  return (await queue.getBackend().client).hget(queue.toKey(id), 'data');
}
