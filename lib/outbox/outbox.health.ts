import { Injectable } from '@nestjs/common';
import { PlatformOutbox } from './platform-outbox.js';

/** When the outbox counts as down besides Redis out of reach; both unset (default), only Redis counts. */
export interface PlatformOutboxHealthOptions {
  /** Down when the oldest message not yet sent has waited longer than this (ms). */
  readonly maxOldestAgeMs?: number;
  /** Down when more messages than this are dead-lettered. */
  readonly maxDeadLetters?: number;
}

/** A result as `@nestjs/terminus` reads one (its `HealthIndicatorResult`): a status and details under `key`. */
export type PlatformOutboxHealth<Key extends string> = Record<
  Key,
  { readonly status: 'up' | 'down'; readonly [detail: string]: unknown }
>;

/**
 * The outbox's health for `@nestjs/terminus` (`HealthCheckService.check([() => indicator.isHealthy()])`): its
 * queue's depth, the age of its oldest message and its counts. Down when Redis does not answer, or past the limits of
 * `options`; a platform outage alone leaves it up (messages wait, which is what the outbox is for). Never a message,
 * a tenant id or a key. Provided by `PlatformOutboxModule`; needs nothing of Terminus but its check service.
 */
@Injectable()
export class PlatformOutboxHealthIndicator {
  constructor(private readonly outbox: PlatformOutbox) {}

  async isHealthy<const Key extends string = 'platform-outbox'>(
    key: Key = 'platform-outbox' as Key,
    options: PlatformOutboxHealthOptions = {},
  ): Promise<PlatformOutboxHealth<Key>> {
    const result = (status: 'up' | 'down', detail: object) =>
      ({ [key]: { ...detail, status } }) as PlatformOutboxHealth<Key>;
    const status = await this.outbox.status().catch(() => undefined);
    if (!status) return result('down', { message: 'the outbox cannot read its queue: Redis does not answer' });
    const { maxOldestAgeMs, maxDeadLetters } = options;
    const problem =
      maxOldestAgeMs !== undefined && status.oldestAgeMs > maxOldestAgeMs
        ? `the oldest message has waited ${status.oldestAgeMs} ms, more than ${maxOldestAgeMs} ms`
        : maxDeadLetters !== undefined && status.deadLettered > maxDeadLetters
          ? `${status.deadLettered} messages are dead-lettered, more than ${maxDeadLetters}`
          : undefined;
    return problem ? result('down', { message: problem, ...status }) : result('up', status);
  }
}
