import { channel } from 'node:diagnostics_channel';
import { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from '../index.js';

/** What happened to an outbox job, as telemetry names it. */
export type OutboxTelemetryEvent = 'queued' | 'sent' | 'retried' | 'failed' | 'dead_lettered';

/**
 * What the outbox publishes on the package's diagnostics channel (`PLATFORM_AUTH_DIAGNOSTICS_CHANNEL`) beside the
 * core's events: the event, the queue and the integration's name (`tenants` for a tenant's message).
 */
export interface OutboxDiagnosticsEvent {
  readonly integration: string;
  readonly event: 'outbox';
  readonly outcome: OutboxTelemetryEvent;
  readonly queue: string;
}

/** The part of `@opentelemetry/api` the outbox uses. */
interface MetricsApi {
  readonly metrics: {
    getMeter(name: string): {
      createCounter(
        name: string,
        options: { description: string; unit: string },
      ): { add(value: number, attributes: Record<string, string>): void };
    };
  };
}

const diagnostics = channel(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL);

/**
 * The outbox's jobs counted by what happened to them (`platform_auth.outbox.jobs`, with the package's meter, when
 * the application has `@opentelemetry/api`), and the same events on the diagnostics channel. Only the queue's name
 * and the integration's name are recorded: never a tenant id, a message id, a path or a body.
 */
export class OutboxTelemetry {
  #counter?: ReturnType<ReturnType<MetricsApi['metrics']['getMeter']>['createCounter']>;
  readonly #ready: Promise<void>;

  constructor(private readonly queue: string) {
    this.#ready = (import('@opentelemetry/api') as Promise<unknown> as Promise<MetricsApi>).then(
      (api) => {
        this.#counter = api.metrics.getMeter('nestjs-platform-auth').createCounter('platform_auth.outbox.jobs', {
          description: 'Outbox jobs by what happened to them: queued, sent, retried, failed, dead_lettered',
          unit: '{job}',
        });
      },
      () => undefined,
    );
  }

  /** Resolves once the OpenTelemetry API is loaded (or known to be absent). */
  loaded(): Promise<void> {
    return this.#ready;
  }

  /** `integration`: a named integration, `default`, or `tenants` for a tenant's message. */
  record(outcome: OutboxTelemetryEvent, integration: string): void {
    this.#counter?.add(1, {
      'platform_auth.outbox.event': outcome,
      'platform_auth.outbox.queue': this.queue,
      'platform_auth.integration.name': integration,
    });
    if (diagnostics.hasSubscribers) {
      const published: OutboxDiagnosticsEvent = { integration, event: 'outbox', outcome, queue: this.queue };
      diagnostics.publish(published);
    }
  }
}
