import { PlatformAuthError } from '../platform-auth.errors.js';

/** What is wrong: a setting of the module, a message given to `enqueue`, an unknown job, or Redis out of reach. */
export type PlatformOutboxFailure = 'config' | 'invalid_message' | 'not_found' | 'unavailable';

/**
 * An outbox call that cannot be done. The message names the setting, field or header concerned, never a value of a
 * header or a body.
 */
export class PlatformOutboxError extends PlatformAuthError {
  readonly code = 'PLATFORM_OUTBOX';

  constructor(
    readonly reason: PlatformOutboxFailure,
    message: string,
  ) {
    super(message);
  }
}
