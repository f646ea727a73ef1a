import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface OtelMemory {
  /** Every metric collected so far, by name (the latest export). */
  collect(): Promise<Map<string, MetricData>>;
  readonly spans: InMemorySpanExporter;
  close(): Promise<void>;
}

/**
 * The OpenTelemetry SDK with in-memory exporters and the AsyncLocalStorage context manager (what the Node SDK
 * registers), as the global providers: as an app registers its SDK before Nest starts. `close()` unregisters them
 * so the next test starts clean.
 */
export function installOtelMemory(): OtelMemory {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return {
    spans,
    async collect() {
      exporter.reset();
      await reader.forceFlush();
      const byName = new Map<string, MetricData>();
      for (const resource of exporter.getMetrics()) {
        for (const scope of resource.scopeMetrics)
          for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
      }
      return byName;
    },
    async close() {
      metrics.disable();
      trace.disable();
      context.disable();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}
