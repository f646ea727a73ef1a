import { PlatformAuthError } from '../../index.js';

/**
 * What is wrong: a setting (the schema's name, a driver that is not installed), a handle that is not an open
 * transaction, or an idempotency key already taken by another request.
 */
type PostgresOutboxFailure = 'config' | 'not_in_transaction' | 'key_conflict';

/** A call of the Postgres outbox that cannot be done. The message names what is wrong, never a value it stores. */
export class PostgresOutboxError extends PlatformAuthError {
  readonly code = 'PLATFORM_OUTBOX_POSTGRES';

  constructor(
    readonly reason: PostgresOutboxFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A message whose id is in the outbox (waiting, in flight or dead-lettered) for another request: nothing of the call
 * was stored, and the message already there is unchanged.
 */
export class PostgresOutboxKeyConflictError extends PostgresOutboxError {
  constructor(
    /** The id of the message already stored. */
    readonly id: string,
    /** What differs from the stored request: `method`, `path`, `headers`, `body`; never their values. */
    readonly differs: readonly string[],
  ) {
    super(
      'key_conflict',
      `the outbox already holds the message ${id} for another request (its ${differs.join(', ')} differ)`,
    );
  }
}
