/**
 * The part of `@opentelemetry/api` (>= 1.7 < 2) the module uses. Our own types, so the package compiles and runs
 * without the API installed: it is an optional peer, loaded with `import()` only when present.
 */
export type OtelAttributes = Record<string, string | number | boolean | undefined>;

export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

export interface OtelObservableResult {
  observe(value: number, attributes?: OtelAttributes): void;
}

export interface OtelObservableGauge {
  addCallback(callback: (result: OtelObservableResult) => void): void;
  removeCallback(callback: (result: OtelObservableResult) => void): void;
}

interface OtelInstrumentOptions {
  description?: string;
  unit?: string;
}

export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram;
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservableGauge;
}

export interface OtelSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}

/** An OpenTelemetry `Context`: opaque here, only handed back to the API. */
type OtelContext = object;

export interface OtelTracer {
  startSpan(
    name: string,
    options?: { kind?: number; attributes?: OtelAttributes; startTime?: number },
    context?: OtelContext,
  ): OtelSpan;
}

export interface OtelApi {
  metrics: { getMeter(name: string, version?: string): OtelMeter };
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
  };
  context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
}

/**
 * `SpanStatusCode.ERROR` and `SpanKind.INTERNAL` of the API; stable numbers since 1.0. Our spans are INTERNAL: the
 * HTTP requests inside them are the CLIENT spans, made by the app's HTTP instrumentation.
 */
export const OTEL_SPAN_STATUS_ERROR = 2;
export const OTEL_SPAN_KIND_INTERNAL = 0;

/** Loads `@opentelemetry/api` when it is installed, `undefined` when it is not. */
export function loadOtelApi(): Promise<OtelApi | undefined> {
  return import('@opentelemetry/api').then(
    (module) => module as unknown as OtelApi,
    () => undefined,
  );
}
