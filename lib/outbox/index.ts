// The `nestjs-platform-auth/outbox` entry point; needs the optional peer `bullmq` 6 (and `redis` for a connection
// given as a URL, Cluster nodes or Sentinel). Built on the package's public entry points only, as another package
// would be: it imports nothing else of the package, and the package names none of it.
export { PlatformOutbox } from './platform-outbox.js';
export {
  PlatformOutboxModule,
  type PlatformOutboxModuleAsyncOptions,
  type PlatformOutboxModuleExtras,
  type PlatformOutboxModuleOptions,
} from './outbox.module.js';
export {
  PlatformOutboxHealthIndicator,
  type PlatformOutboxHealth,
  type PlatformOutboxHealthOptions,
} from './outbox.health.js';
export { PlatformOutboxError, PlatformOutboxKeyConflictError, type PlatformOutboxFailure } from './outbox.errors.js';
export type { OutboxDiagnosticsEvent, OutboxTelemetryEvent } from './outbox.telemetry.js';
export type {
  OutboxBodyCodec,
  OutboxConnection,
  OutboxEvents,
  OutboxFailedJob,
  OutboxJob,
  OutboxMessage,
  OutboxReconcile,
  OutboxRetryOptions,
  OutboxStatus,
  OutboxWorkerOptions,
  PlatformOutboxOptions,
  StoredMessage,
} from './outbox.types.js';
// The base of the errors above and the types of the `clock` and `connection` options, from the main entry point, so
// this one is complete on its own.
export { PlatformAuthError, type Clock, type RedisConnectionOptions } from '../index.js';
