// The `nestjs-platform-auth/outbox` entry point; needs the optional peer `bullmq` 6 (and `redis` for a connection
// given as a URL or options).
export { PlatformOutbox } from './platform-outbox.js';
export {
  PlatformOutboxModule,
  type PlatformOutboxModuleAsyncOptions,
  type PlatformOutboxModuleExtras,
  type PlatformOutboxModuleOptions,
} from './outbox.module.js';
export { PlatformOutboxError, PlatformOutboxKeyConflictError, type PlatformOutboxFailure } from './outbox.errors.js';
export type {
  OutboxBodyCodec,
  OutboxConnection,
  OutboxEvents,
  OutboxFailedJob,
  OutboxJob,
  OutboxMessage,
  OutboxReconcile,
  OutboxRedisClient,
  OutboxRetryOptions,
  OutboxStatus,
  OutboxWorkerOptions,
  PlatformOutboxOptions,
  StoredMessage,
} from './outbox.types.js';
// The base of the errors above, from the main entry point, so this one is complete on its own.
export { PlatformAuthError } from '../platform-auth.errors.js';
// The type of the `clock` option, as the testing entry point gives it.
export type { Clock } from '../platform-auth.clock.js';
