import { channel } from 'node:diagnostics_channel';
import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { TokenExchangeFailure } from '../platform-auth.errors.js';
import type {
  CredentialChangeOutcome,
  PlatformAuthObserver,
  RateLimitMode,
  RetryReason,
  StoreLockOutcome,
} from '../platform-auth.observer.js';
import type { ExchangeOutcome, TokenSource } from '../token/token.cache.js';
import { DEFAULT_INTEGRATION } from '../options/integration-name.util.js';
import {
  OTEL_SPAN_KIND_INTERNAL,
  OTEL_SPAN_STATUS_ERROR,
  type OtelAttributes,
  type OtelObservableResult,
  type OtelSpan,
} from './otel-api.types.js';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  TELEMETRY_ATTRIBUTES as ATTR,
  TELEMETRY_NAMES as NAMES,
  type PlatformAuthDiagnosticsEventBody,
} from './telemetry.events.js';
import { describeExchange, reauthenticationErrorType, type ExchangeResult } from './telemetry.exchange.js';
import { createInstruments, type Instruments, type TelemetryGaugeSources } from './telemetry.instruments.js';
import { inContext, loadInstrumentationScope } from './telemetry.scope.js';

/** Who the telemetry speaks for. Nothing here is secret: the machineId only ever appears hashed. */
interface TelemetryIdentity {
  /** {@link integrationHash} of the token URL and machineId. */
  readonly integration: string;
  /** The integration's name; absent for the default one, which telemetry calls `default`. */
  readonly name?: string;
  /** The token endpoint's host (`server.address`). */
  readonly serverAddress?: string;
  /** Where each exchange is described at `debug` level. */
  readonly logger?: LoggerService;
  /** Added to spans only: a tenant's id, where the application turned that on (spans do not add to cardinality). */
  readonly spanAttributes?: Readonly<Record<string, string>>;
  /** Added to data points only: a tenant's id, for the tenants the application listed (each one a new series). */
  readonly metricAttributes?: Readonly<Record<string, string>>;
}

const diagnostics = channel(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL);

/**
 * Metrics, one span per exchange, and the same events on a diagnostics channel. OpenTelemetry is used only when
 * `@opentelemetry/api` can be imported; without it every method still publishes to the channel and costs nothing
 * else. Register your SDK's providers before the Nest app starts: instruments are created once, at start-up.
 *
 * The exchange span is the active context while the exchange runs, so the HTTP client spans of its attempts (from
 * the app's HTTP instrumentation) are its children; the re-send after a 401 gets a span of its own on the caller's
 * trace, around the renewal and the second request.
 */
export class PlatformAuthTelemetry implements PlatformAuthObserver {
  private instruments?: Instruments;
  /** On every data point: the integration's hash and its name (`default` for the default one). */
  private readonly attributes: Readonly<Record<string, string>>;
  /** The exchange's: {@link attributes} and the token endpoint's host. */
  private readonly exchangeAttributes: Readonly<Record<string, string>>;
  /** On every span: the integration's hash and its name. */
  private readonly spanAttributes: Readonly<Record<string, string>>;
  private readonly exchangeSpanAttributes: Readonly<Record<string, string>>;
  private gaugeSources?: TelemetryGaugeSources;

  private constructor(
    private readonly identity: TelemetryIdentity,
    private readonly clock: Clock,
  ) {
    const common = {
      [ATTR.integration]: identity.integration,
      [ATTR.integrationName]: identity.name ?? DEFAULT_INTEGRATION,
    };
    const server: Record<string, string> =
      identity.serverAddress === undefined ? {} : { [ATTR.serverAddress]: identity.serverAddress };
    this.attributes = { ...common, ...identity.metricAttributes };
    this.exchangeAttributes = { ...this.attributes, ...server };
    this.spanAttributes = { ...common, ...identity.spanAttributes };
    this.exchangeSpanAttributes = { ...this.spanAttributes, ...server };
  }

  /** Loads `@opentelemetry/api` when it is installed; a channel-only instance when it is not. */
  static async load(identity: TelemetryIdentity, clock: Clock): Promise<PlatformAuthTelemetry> {
    const telemetry = new PlatformAuthTelemetry(identity, clock);
    const scope = await loadInstrumentationScope();
    if (scope) telemetry.instruments = createInstruments(scope, (read) => telemetry.secondsUntil(read));
    return telemetry;
  }

  /** Telemetry that publishes on the diagnostics channel only, whatever is installed, and logs nothing. */
  static channelOnly(integration: string, clock: Clock): PlatformAuthTelemetry {
    return new PlatformAuthTelemetry({ integration }, clock);
  }

  /** Where the time-to-expiry gauges read from; set once the token cache and the credentials exist. */
  observe(sources: TelemetryGaugeSources): void {
    this.gaugeSources = sources;
  }

  /**
   * Runs one exchange inside its span (the active context, so the attempts' HTTP spans are its children), and
   * counts, times, publishes and logs it.
   */
  async recordExchange<T extends ExchangeOutcome>(run: () => Promise<T>): Promise<T> {
    const startedAt = this.clock.now();
    this.publish({ event: 'exchange:start' });
    const otel = this.instruments;
    const span = otel?.tracer.startSpan(NAMES.exchangeSpan, {
      kind: OTEL_SPAN_KIND_INTERNAL,
      attributes: this.exchangeSpanAttributes,
    });
    let outcome: T;
    try {
      outcome = await (otel && span ? inContext(otel.api, span, run) : run());
    } catch (error) {
      const reason = (error as { reason?: TokenExchangeFailure }).reason ?? 'signing_failed';
      this.exchangeEnded(span, startedAt, { ok: false, reason, attempts: 0 });
      throw error;
    }
    this.exchangeEnded(
      span,
      startedAt,
      outcome.ok
        ? {
            ok: true,
            attempts: outcome.attempts,
            lifetimeSeconds: Math.round((outcome.token.expiresAtMs - outcome.token.issuedAtMs) / 1000),
          }
        : {
            ok: false,
            reason: outcome.error.reason,
            status: outcome.error.status,
            attempts: outcome.error.attempts,
          },
    );
    return outcome;
  }

  /**
   * A 401 from the platform: the interceptor drops the token and `resend` renews it and sends the request again,
   * inside a span of its own on the caller's trace.
   */
  async reauthenticate<T extends { readonly status: number }>(resend: () => Promise<T>): Promise<T> {
    this.publish({ event: 'reauthentication' });
    const otel = this.instruments;
    if (!otel) return resend();
    const span = otel.tracer.startSpan(NAMES.reauthenticationSpan, {
      kind: OTEL_SPAN_KIND_INTERNAL,
      attributes: this.spanAttributes,
    });
    try {
      const response = await inContext(otel.api, span, resend);
      // An answer is an answer whatever the client makes of it (axios throws for a 4xx, fetch does not): a re-send
      // refused again, or failed otherwise, is a failure on every client alike.
      const { status } = response;
      this.reauthenticationEnded(span, { status, errorType: status >= 400 ? String(status) : undefined });
      return response;
    } catch (error) {
      const status = (error as { response?: { status?: unknown } }).response?.status;
      this.reauthenticationEnded(span, {
        status: typeof status === 'number' ? status : undefined,
        errorType: reauthenticationErrorType(error, status),
      });
      throw error;
    }
  }

  /** For the shared token store: the outcome of one attempt to take its exchange lock. */
  storeLock(outcome: StoreLockOutcome): void {
    this.instruments?.storeLock.add(1, { ...this.attributes, [ATTR.storeLockOutcome]: outcome });
    this.publish({ event: 'store:lock', outcome });
  }

  credentialsChanged(outcome: CredentialChangeOutcome): void {
    this.instruments?.credentialChanges.add(1, { ...this.attributes, [ATTR.credentialsOutcome]: outcome });
    this.publish({ event: 'credentials', outcome });
  }

  certificateExpiring(daysLeft: number): void {
    this.publish({ event: 'certificate:expiring', daysLeft });
  }

  /**
   * A call to the platform's APIs is re-sent. The library makes no HTTP spans of its own (the app's instrumentation
   * does), so the re-send's number is on the counter and the event.
   */
  retried(reason: RetryReason, resendCount: number): void {
    this.instruments?.retries.add(1, {
      ...this.attributes,
      [ATTR.retryReason]: reason,
      [ATTR.resendCount]: resendCount,
    });
    this.publish({ event: 'call:retry', reason, resendCount });
  }

  retryBudgetExhausted(): void {
    this.publish({ event: 'call:retry-budget-exhausted' });
  }

  /**
   * Every request's wait under a rate limit: on the histogram, and as an event in that request's own context (a
   * subscriber's `AsyncLocalStorage` ties it to the call; undici publishes per request the same way). Integrations
   * without a rate limit publish none, and nothing is built while nobody subscribes.
   */
  rateLimitWait(waitMs: number): void {
    this.instruments?.rateLimitWait.record(waitMs / 1000, this.attributes);
    this.publish({ event: 'rate_limit:turn', waitMs });
  }

  rateLimitMode(mode: RateLimitMode): void {
    this.publish({ event: 'rate_limit:mode', mode });
  }

  /** At shutdown: the gauges stop reading from this integration. */
  close(): void {
    for (const [gauge, callback] of this.instruments?.gauges ?? []) gauge.removeCallback(callback);
    this.instruments = undefined;
  }

  private exchangeEnded(span: OtelSpan | undefined, startedAt: number, result: ExchangeResult): void {
    const durationMs = Math.max(0, this.clock.now() - startedAt);
    const outcome = result.ok ? 'success' : 'failure';
    const otel = this.instruments;
    if (otel) {
      const attributes: OtelAttributes = {
        ...this.exchangeAttributes,
        [ATTR.outcome]: outcome,
        ...(result.ok ? {} : { [ATTR.errorType]: result.reason ?? '_OTHER' }),
        ...(result.status === undefined ? {} : { [ATTR.statusCode]: result.status }),
      };
      otel.exchanges.add(1, attributes);
      // OpenTelemetry's convention for durations is seconds; every other surface says milliseconds.
      otel.exchangeDuration.record(durationMs / 1000, attributes);
    }
    if (span) {
      span.setAttribute(ATTR.attempts, result.attempts);
      span.setAttribute(ATTR.outcome, outcome);
      if (result.status !== undefined) span.setAttribute(ATTR.statusCode, result.status);
      if (!result.ok) {
        span.setAttribute(ATTR.errorType, result.reason ?? '_OTHER');
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
      durationMs,
    });
    this.identity.logger?.debug?.(describeExchange(result, durationMs));
  }

  private reauthenticationEnded(span: OtelSpan, end: { status?: number; errorType?: string }): void {
    const otel = this.instruments;
    const outcome = end.errorType === undefined ? 'success' : 'failure';
    const attributes: OtelAttributes = {
      ...this.attributes,
      [ATTR.outcome]: outcome,
      ...(end.errorType === undefined ? {} : { [ATTR.errorType]: end.errorType }),
    };
    otel?.reauthentications.add(1, attributes);
    span.setAttribute(ATTR.outcome, outcome);
    if (end.status !== undefined) span.setAttribute(ATTR.statusCode, end.status);
    if (end.errorType !== undefined) {
      span.setAttribute(ATTR.errorType, end.errorType);
      span.setStatus({ code: OTEL_SPAN_STATUS_ERROR, message: end.errorType });
    }
    span.end();
  }

  private publish(event: PlatformAuthDiagnosticsEventBody): void {
    if (diagnostics.hasSubscribers) diagnostics.publish({ integration: this.identity.integration, ...event });
  }

  /** A gauge's callback: seconds from now until what `read` returns, when there is something to read. */
  private secondsUntil(
    read: (sources: TelemetryGaugeSources) => number | undefined,
  ): (result: OtelObservableResult) => void {
    return (result) => {
      const at = this.gaugeSources && read(this.gaugeSources);
      if (at !== undefined) result.observe((at - this.clock.now()) / 1000, this.attributes);
    };
  }
}

/** `inner` with every exchange it makes counted, timed, traced and logged. Applied by the composition root. */
export function observedTokenSource(inner: TokenSource, telemetry: PlatformAuthTelemetry): TokenSource {
  return {
    exchange: (signal, policy) => telemetry.recordExchange(() => inner.exchange(signal, policy)),
    refused: (accessToken) => inner.refused?.(accessToken),
  };
}
