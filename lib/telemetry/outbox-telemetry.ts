import { channel } from 'node:diagnostics_channel';
import type { OtelCounter } from './otel-api.types.js';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  TELEMETRY_ATTRIBUTES as ATTR,
  TELEMETRY_NAMES as NAMES,
  type OutboxTelemetryEvent,
  type PlatformAuthDiagnosticsEvent,
} from './telemetry.events.js';
import { loadInstrumentationScope } from './telemetry.scope.js';

const diagnostics = channel(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL);

/**
 * The outbox's jobs counted by what happened to them, and the same events on the diagnostics channel. Only the
 * queue's name and the integration's name are recorded: never a tenant id, a message id, a path or a body.
 */
export class OutboxTelemetry {
  private counter?: OtelCounter;
  private readonly ready: Promise<void>;

  constructor(private readonly queue: string) {
    this.ready = loadInstrumentationScope().then((scope) => {
      this.counter = scope?.meter.createCounter(NAMES.outboxJobs, {
        description: 'Outbox jobs by what happened to them: queued, sent, retried, failed, dead_lettered',
        unit: '{job}',
      });
    });
  }

  /** Resolves once the OpenTelemetry API is loaded (or known to be absent). */
  loaded(): Promise<void> {
    return this.ready;
  }

  /** `integration`: a named integration, `default`, or `tenants` for a tenant's message. */
  record(event: OutboxTelemetryEvent, integration: string): void {
    this.counter?.add(1, {
      [ATTR.outboxEvent]: event,
      [ATTR.outboxQueue]: this.queue,
      [ATTR.integrationName]: integration,
    });
    if (diagnostics.hasSubscribers) {
      const published: PlatformAuthDiagnosticsEvent = {
        integration,
        event: 'outbox',
        outcome: event,
        queue: this.queue,
      };
      diagnostics.publish(published);
    }
  }
}
