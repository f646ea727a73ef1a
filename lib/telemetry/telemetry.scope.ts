import { readFile } from 'node:fs/promises';
import { loadOtelApi, type OtelApi, type OtelMeter, type OtelSpan, type OtelTracer } from './otel-api.types.js';
import { TELEMETRY_NAMES as NAMES } from './telemetry.events.js';

/** The name in the manifest this file ships with, which tells it from the app's own package.json further up. */
const PACKAGE_NAME = 'nestjs-platform-auth';

/** The API, with the tracer and meter of this package: its instrumentation scope, named and versioned. */
export interface InstrumentationScope {
  readonly api: OtelApi;
  readonly tracer: OtelTracer;
  readonly meter: OtelMeter;
}

/** Loads `@opentelemetry/api` and this package's scope in it; `undefined` when the API is not installed. */
export async function loadInstrumentationScope(): Promise<InstrumentationScope | undefined> {
  const [api, version] = await Promise.all([loadOtelApi(), packageVersion()]);
  if (!api) return undefined;
  return {
    api,
    tracer: api.trace.getTracer(NAMES.meter, version),
    meter: api.metrics.getMeter(NAMES.meter, version),
  };
}

/** Read once per process: every telemetry service (one per integration and tenant) asks for it. */
let versionRead: Promise<string | undefined> | undefined;

function packageVersion(): Promise<string | undefined> {
  return (versionRead ??= readPackageVersion());
}

/**
 * The version of the package's manifest: the first package.json above this file that names the package. Read at run
 * time because the file sits at a different depth in each build (dist/telemetry/, dist/cjs/telemetry/ below the
 * CommonJS build's nameless package.json, lib/telemetry/ under test); `undefined` when no manifest can be read.
 */
async function readPackageVersion(): Promise<string | undefined> {
  let dir = new URL('.', import.meta.url);
  for (;;) {
    const manifest = await readFile(new URL('package.json', dir), 'utf8')
      .then((text) => JSON.parse(text) as { name?: unknown; version?: unknown })
      .catch(() => undefined);
    if (manifest?.name === PACKAGE_NAME) return typeof manifest.version === 'string' ? manifest.version : undefined;
    const parent = new URL('..', dir);
    if (parent.href === dir.href) return undefined;
    dir = parent;
  }
}

/** Runs `run` with `span` as the active span, so what it starts (HTTP client spans above all) nests under it. */
export function inContext<T>(api: OtelApi, span: OtelSpan, run: () => Promise<T>): Promise<T> {
  return api.context.with(api.trace.setSpan(api.context.active(), span), run);
}
