import { channel } from 'node:diagnostics_channel';
import type { Clock } from '../platform-auth.clock.js';
import type { TokenExchangeFailure } from '../platform-auth.errors.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { TokenSource } from '../token/token.cache.js';
import {
  OTEL_SPAN_KIND_CLIENT,
  OTEL_SPAN_STATUS_ERROR,
  type OtelApi,
  type OtelCounter,
  type OtelHistogram,
  type OtelObservableGauge,
  type OtelObservableResult,
  type OtelTracer,
} from './otel-api.types.js';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  TELEMETRY_NAMES as NAMES,
  type CredentialChangeOutcome,
  type PlatformAuthDiagnosticsEventBody,
  type StoreLockOutcome,
} from './telemetry.events.js';

/** Where the two gauges read their values; times in ms since the epoch, `undefined` when there is none. */
export interface TelemetryGaugeSources {
  tokenExpiresAtMs(): number | undefined;
  certificateNotAfterMs(): number | undefined;
}

export interface ExchangeResult {
  readonly ok: boolean;
  /** `signing_failed`: no request was made, the assertion could not be signed. */
  readonly reason?: TokenExchangeFailure | 'signing_failed';
  readonly status?: number;
  readonly attempts: number;
}

/** What one exchange resolves with (the token cache's `ExchangeOutcome`, seen structurally). */
export type ObservedOutcome =
  | { readonly ok: true; readonly attempts: number }
  | {
      readonly ok: false;
      readonly error: { readonly reason: TokenExchangeFailure; readonly status?: number; readonly attempts: number };
    };

/** Ends what {@link PlatformAuthTelemetry.exchangeStarted} began; returns the duration in ms. */
export type ExchangeRecorder = (result: ExchangeResult) => number;

interface Instruments {
  readonly tracer: OtelTracer;
  readonly exchanges: OtelCounter;
  readonly exchangeDuration: OtelHistogram;
  readonly reauthentications: OtelCounter;
  readonly storeLock: OtelCounter;
  readonly credentialChanges: OtelCounter;
  readonly gauges: readonly [OtelObservableGauge, (result: OtelObservableResult) => void][];
}

const diagnostics = channel(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL);

/**
 * Metrics, one span per exchange, and the same events on a diagnostics channel. OpenTelemetry is used only when
 * `@opentelemetry/api` can be imported; without it every method still publishes to the channel and costs nothing
 * else. Register your SDK's providers before the Nest app starts: instruments are created once, at start-up.
 */
export class PlatformAuthTelemetry implements PlatformAuthObserver {
  private instruments?: Instruments;
  private readonly attributes: Readonly<Record<string, string>>;
  private gaugeSources?: TelemetryGaugeSources;

  private constructor(
    readonly integration: string,
    private readonly clock: Clock,
    name?: string,
  ) {
    this.attributes = {
      [NAMES.integrationAttribute]: integration,
      ...(name === undefined ? {} : { [NAMES.integrationNameAttribute]: name }),
    };
  }

  /** Loads `@opentelemetry/api` when it is installed; a channel-only instance when it is not. */
  static async load(integration: string, clock: Clock, name?: string): Promise<PlatformAuthTelemetry> {
    const telemetry = new PlatformAuthTelemetry(integration, clock, name);
    const api = await import('@opentelemetry/api').then(
      (module) => module as unknown as OtelApi,
      () => undefined,
    );
    if (api) telemetry.instruments = telemetry.createInstruments(api);
    return telemetry;
  }

  /** Telemetry that publishes on the diagnostics channel only, whatever is installed. */
  static channelOnly(integration: string, clock: Clock): PlatformAuthTelemetry {
    return new PlatformAuthTelemetry(integration, clock);
  }

  /** Where the time-to-expiry gauges read from; set once the token cache and the credentials exist. */
  observe(sources: TelemetryGaugeSources): void {
    this.gaugeSources = sources;
  }

  /** Whether OpenTelemetry was found and instruments are live. */
  get otelEnabled(): boolean {
    return this.instruments !== undefined;
  }

  exchangeStarted(): ExchangeRecorder {
    const startedAt = this.clock.now();
    const span = this.instruments?.tracer.startSpan(NAMES.exchangeSpan, {
      kind: OTEL_SPAN_KIND_CLIENT,
      attributes: this.attributes,
    });
    this.publish({ event: 'exchange:start' });
    return (result) => {
      const durationMs = Math.max(0, this.clock.now() - startedAt);
      const outcome = result.ok ? 'success' : 'failure';
      const metricAttributes = { ...this.attributes, outcome, reason: result.reason ?? 'none' };
      this.instruments?.exchanges.add(1, metricAttributes);
      this.instruments?.exchangeDuration.record(durationMs / 1000, metricAttributes);
      if (span) {
        span.setAttribute('platform_auth.attempts', result.attempts);
        span.setAttribute('platform_auth.outcome', outcome);
        if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status);
        if (!result.ok) {
          span.setAttribute('error.type', result.reason ?? 'unknown');
          span.setStatus({ code: OTEL_SPAN_STATUS_ERROR, message: result.reason });
        }
        span.end();
      }
      this.publish({
        event: 'exchange:end',
        outcome,
        reason: result.reason,
        status: result.status,
        attempts: result.attempts,
        durationSeconds: durationMs / 1000,
      });
      return durationMs;
    };
  }

  /** Runs one exchange inside a span, counting and timing it. */
  async recordExchange<T extends ObservedOutcome>(run: () => Promise<T>): Promise<T> {
    const end = this.exchangeStarted();
    let outcome: T;
    try {
      outcome = await run();
    } catch (error) {
      const reason = (error as { reason?: TokenExchangeFailure }).reason ?? 'signing_failed';
      end({ ok: false, reason, attempts: 0 });
      throw error;
    }
    end(
      outcome.ok
        ? { ok: true, attempts: outcome.attempts }
        : { ok: false, reason: outcome.error.reason, status: outcome.error.status, attempts: outcome.error.attempts },
    );
    return outcome;
  }

  /** A 401 from the platform made the interceptor drop the token and re-send with a fresh one. */
  reauthenticated(): void {
    this.instruments?.reauthentications.add(1, this.attributes);
    this.publish({ event: 'reauthentication' });
  }

  /** For the shared token store: the outcome of one attempt to take its exchange lock. */
  storeLock(outcome: StoreLockOutcome): void {
    this.instruments?.storeLock.add(1, { ...this.attributes, outcome });
    this.publish({ event: 'store:lock', outcome });
  }

  credentialsChanged(outcome: CredentialChangeOutcome): void {
    this.instruments?.credentialChanges.add(1, { ...this.attributes, outcome });
    this.publish({ event: 'credentials', outcome });
  }

  certificateExpiring(daysLeft: number): void {
    this.publish({ event: 'certificate:expiring', daysLeft });
  }

  /** At shutdown: the gauges stop reading from this integration. */
  close(): void {
    for (const [gauge, callback] of this.instruments?.gauges ?? []) gauge.removeCallback(callback);
    this.instruments = undefined;
  }

  private publish(event: PlatformAuthDiagnosticsEventBody): void {
    if (diagnostics.hasSubscribers) diagnostics.publish({ integration: this.integration, ...event });
  }

  private createInstruments(api: OtelApi): Instruments {
    const meter = api.metrics.getMeter(NAMES.meter);
    const secondsUntil =
      (read: (sources: TelemetryGaugeSources) => number | undefined) => (result: OtelObservableResult) => {
        const at = this.gaugeSources && read(this.gaugeSources);
        if (at !== undefined) result.observe((at - this.clock.now()) / 1000, this.attributes);
      };
    const tokenGauge = meter.createObservableGauge(NAMES.tokenTimeToExpiry, {
      description: 'Seconds until the cached access token expires',
      unit: 's',
    });
    const certificateGauge = meter.createObservableGauge(NAMES.certificateTimeToExpiry, {
      description: 'Seconds until the configured certificate expires (negative once expired)',
      unit: 's',
    });
    const gauges: [OtelObservableGauge, (result: OtelObservableResult) => void][] = [
      [tokenGauge, secondsUntil((sources) => sources.tokenExpiresAtMs())],
      [certificateGauge, secondsUntil((sources) => sources.certificateNotAfterMs())],
    ];
    for (const [gauge, callback] of gauges) gauge.addCallback(callback);
    return {
      tracer: api.trace.getTracer(NAMES.meter),
      exchanges: meter.createCounter(NAMES.exchanges, { description: 'Token exchanges, by outcome and reason' }),
      exchangeDuration: meter.createHistogram(NAMES.exchangeDuration, {
        description: 'Duration of one token exchange, retries included',
        unit: 's',
      }),
      reauthentications: meter.createCounter(NAMES.reauthentications, {
        description: 'Requests re-sent with a fresh token after a 401',
      }),
      storeLock: meter.createCounter(NAMES.storeLock, {
        description: "Attempts to take the shared token store's exchange lock, by outcome",
      }),
      credentialChanges: meter.createCounter(NAMES.credentialChanges, {
        description: 'Credential reloads and rotations, by outcome',
      }),
      gauges,
    };
  }
}

/** `inner` with every exchange it makes counted, timed and traced. Applied by the composition root. */
export function observedTokenSource(inner: TokenSource, telemetry: PlatformAuthTelemetry): TokenSource {
  return {
    exchange: (signal, policy) => telemetry.recordExchange(() => inner.exchange(signal, policy)),
    refused: (accessToken) => inner.refused?.(accessToken),
  };
}
