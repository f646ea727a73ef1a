import type {
  OtelApi,
  OtelCounter,
  OtelHistogram,
  OtelObservableGauge,
  OtelObservableResult,
  OtelTracer,
} from './otel-api.types.js';
import { TELEMETRY_NAMES as NAMES } from './telemetry.events.js';
import type { InstrumentationScope } from './telemetry.scope.js';

/** Where the two gauges read their values; times in ms since the epoch, `undefined` when there is none. */
export interface TelemetryGaugeSources {
  tokenExpiresAtMs(): number | undefined;
  certificateNotAfterMs(): number | undefined;
}

/** A gauge's callback, made from what it reads. */
type GaugeCallbackFactory = (
  read: (sources: TelemetryGaugeSources) => number | undefined,
) => (result: OtelObservableResult) => void;

/** A counter or histogram with the unit OpenTelemetry expects, and what it counts. */
export interface Instruments {
  readonly api: OtelApi;
  readonly tracer: OtelTracer;
  readonly exchanges: OtelCounter;
  readonly exchangeDuration: OtelHistogram;
  readonly reauthentications: OtelCounter;
  readonly storeLock: OtelCounter;
  readonly credentialChanges: OtelCounter;
  readonly retries: OtelCounter;
  readonly rateLimitWait: OtelHistogram;
  readonly gauges: readonly [OtelObservableGauge, (result: OtelObservableResult) => void][];
}

/** An integration's instruments, created once at start-up; its gauges observe through `gaugeCallback`. */
export function createInstruments(scope: InstrumentationScope, gaugeCallback: GaugeCallbackFactory): Instruments {
  const { api, tracer, meter } = scope;
  const tokenGauge = meter.createObservableGauge(NAMES.tokenTimeToExpiry, {
    description: 'Seconds until the cached access token expires',
    unit: 's',
  });
  const certificateGauge = meter.createObservableGauge(NAMES.certificateTimeToExpiry, {
    description: 'Seconds until the configured certificate expires (negative once expired)',
    unit: 's',
  });
  const gauges: [OtelObservableGauge, (result: OtelObservableResult) => void][] = [
    [tokenGauge, gaugeCallback((sources) => sources.tokenExpiresAtMs())],
    [certificateGauge, gaugeCallback((sources) => sources.certificateNotAfterMs())],
  ];
  for (const [gauge, callback] of gauges) gauge.addCallback(callback);
  return {
    api,
    tracer,
    exchanges: meter.createCounter(NAMES.exchanges, {
      description: 'Token exchanges, by outcome; failures by error.type',
      unit: '{exchange}',
    }),
    exchangeDuration: meter.createHistogram(NAMES.exchangeDuration, {
      description: 'Duration of one token exchange, retries included',
      unit: 's',
    }),
    reauthentications: meter.createCounter(NAMES.reauthentications, {
      description: 'Requests re-sent with a fresh token after a 401, by outcome',
      unit: '{request}',
    }),
    storeLock: meter.createCounter(NAMES.storeLock, {
      description: "Attempts to take the shared token store's exchange lock, by outcome",
      unit: '{attempt}',
    }),
    credentialChanges: meter.createCounter(NAMES.credentialChanges, {
      description: 'Credential reloads and rotations, by outcome',
      unit: '{change}',
    }),
    retries: meter.createCounter(NAMES.retries, {
      description: "Calls to the platform's APIs re-sent after a transient failure, by reason",
      unit: '{request}',
    }),
    rateLimitWait: meter.createHistogram(NAMES.rateLimitWait, {
      description: "Time a request to the platform's API waited for its turn under the rate limit (0: none)",
      unit: 's',
    }),
    gauges,
  };
}
