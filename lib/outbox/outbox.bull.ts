import type { Job, JobJson } from 'bullmq';
import type { BullMq } from './outbox.connection.js';
import type { OutboxJob, StoredMessage } from './outbox.types.js';

/** What a job's data reads as when Redis holds something that is not JSON there. */
export const UNREADABLE = '[data that is not JSON]';

type JobClass = BullMq['Job'];

/**
 * BullMQ's classes with a job class that reads data that is not JSON as `UNREADABLE` instead of throwing: BullMQ
 * throws for every read that meets such a job (a list, a worker's next job), so one job written by something other
 * than `enqueue` would stop the queue's reads and its workers. Here that job alone is failed, by the worker's check.
 */
export function tolerantBullMq(bull: BullMq): BullMq {
  const Base: JobClass = bull.Job;
  class TolerantJob extends Base {
    static override fromJSON<T, R, N extends string>(
      queue: Parameters<JobClass['fromJSON']>[0],
      json: JobJson,
      jobId?: string,
    ): Job<T, R, N> {
      try {
        return super.fromJSON<T, R, N>(queue, json, jobId);
      } catch {
        const data = JSON.stringify(UNREADABLE);
        try {
          return super.fromJSON<T, R, N>(queue, { ...json, data }, jobId);
        } catch {
          return super.fromJSON<T, R, N>(queue, { ...json, data, opts: '{}' } as unknown as JobJson, jobId);
        }
      }
    }
  }
  // The subclass's instances are BullMQ's jobs; only its generic parameters are out of TypeScript's sight.
  const Tolerant = TolerantJob as unknown as JobClass;
  class Queue extends bull.Queue {
    protected override get Job(): JobClass {
      return Tolerant;
    }
  }
  class Worker extends bull.Worker {
    protected override get Job(): JobClass {
      return Tolerant;
    }
  }
  return { ...bull, Job: Tolerant, Queue, Worker };
}

/** A job's data from its raw JSON in Redis, read as the queue's jobs read it (`UNREADABLE` when it is not JSON). */
export function storedData(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return UNREADABLE;
  }
}

/** A job as the lists, the events and `reconcile` show it. */
export function outboxJob(job: Job): OutboxJob {
  const data: unknown = job.data;
  // A job's data as Redis holds it, whoever wrote it: listed as it is, never sent unchecked.
  return {
    method: '',
    path: '',
    ...(typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as StoredMessage) : undefined),
    id: String(job.id),
    idempotencyKey: (data as Partial<StoredMessage> | undefined)?.idempotencyKey ?? String(job.id),
    attemptsMade: job.attemptsMade,
    enqueuedAt: job.timestamp,
  };
}
