import { PlatformAuthError } from '../index.js';

/**
 * What is wrong: a setting of the module, a message given to `enqueue`, an idempotency key already taken by another
 * request, an unknown job, or Redis out of reach.
 */
export type PlatformOutboxFailure = 'config' | 'invalid_message' | 'key_conflict' | 'not_found' | 'unavailable';

/**
 * An outbox call that cannot be done. The message names the setting, field or header concerned, never a value of a
 * header or a body; `cause` is the error of the driver (node-redis, BullMQ) when one said why.
 */
export class PlatformOutboxError extends PlatformAuthError {
  readonly code = 'PLATFORM_OUTBOX';

  constructor(
    readonly reason: PlatformOutboxFailure,
    message: string,
    options?: { readonly cause?: unknown },
  ) {
    super(message);
    // As `Error`'s own `cause`: not enumerable, so a serialised error carries our message, not the driver's.
    if (options?.cause !== undefined)
      Object.defineProperty(this, 'cause', { value: options.cause, configurable: true, writable: true });
  }
}

/**
 * `enqueue` with an idempotency key its integration or tenant already used for another request (as an HTTP API
 * answers 422 to a reused `Idempotency-Key`): nothing is stored, and the message already in the outbox is unchanged.
 */
export class PlatformOutboxKeyConflictError extends PlatformOutboxError {
  constructor(
    /** The key as the caller gave it. */
    readonly idempotencyKey: string,
    /** The id of the message already stored under the key. */
    readonly id: string,
    /** What differs from the stored request: `method`, `path`, `headers`, `body`; never their values. */
    readonly differs: readonly string[],
  ) {
    super(
      'key_conflict',
      `PlatformOutbox.enqueue: the idempotency key ${idempotencyKey} is already in the outbox for another request ` +
        `(its ${differs.join(', ')} differ); a new request needs a new key`,
    );
  }
}
