import type { ConnectionOptions } from 'bullmq';

/** The commands of node-redis (camel case) or of ioredis (lower case) the tally needs. */
interface TallyClient {
  zAdd?(key: string, member: { score: number; value: string }): Promise<unknown>;
  zRem?(key: string, member: string): Promise<unknown>;
  zCard?(key: string): Promise<number>;
  zadd?(key: string, score: number, member: string): Promise<unknown>;
  zrem?(key: string, member: string): Promise<unknown>;
  zcard?(key: string): Promise<number>;
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

  constructor(connection: ConnectionOptions, queueName: string, prefix = 'bull') {
    this.#client = connection as TallyClient;
    this.#key = `${prefix}:${queueName}:platform-outbox:refused`;
  }

  async add(id: string, at: number): Promise<void> {
    const client = this.#client;
    await (client.zAdd ? client.zAdd(this.#key, { score: at, value: id }) : client.zadd?.(this.#key, at, id));
  }

  async remove(id: string): Promise<void> {
    const client = this.#client;
    await (client.zRem ? client.zRem(this.#key, id) : client.zrem?.(this.#key, id));
  }

  async count(): Promise<number> {
    const client = this.#client;
    return Number((await (client.zCard ? client.zCard(this.#key) : client.zcard?.(this.#key))) ?? 0);
  }
}
