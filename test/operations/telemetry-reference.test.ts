import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Test } from '@nestjs/testing';
import { DataPointType, type MetricData } from '@opentelemetry/sdk-metrics';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  TokenExchangeError,
  getPlatformHttpServiceToken,
  getTokenProviderToken,
  type PlatformHttpService,
  type TokenProvider,
} from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from '../../lib/telemetry/telemetry.events.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { codeIn, operationsTables } from '../support/markdown-tables.js';
import { installOtelMemory, type OtelMemory } from '../support/otel-memory.js';
import { signIn, startUserFixture } from '../user/user-test-kit.js';

const DAY = 86_400_000;

const documentedTables = () => operationsTables('\n## Telemetry');
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

interface Emitted {
  spans: Map<string, { kind: number; attributes: Set<string> }>;
  metrics: Map<string, { instrument: string; unit: string; attributes: Set<string> }>;
  events: Map<string, Set<string>>;
}

const INSTRUMENT_OF: Partial<Record<DataPointType, string>> = {
  [DataPointType.SUM]: 'counter',
  [DataPointType.HISTOGRAM]: 'histogram',
  [DataPointType.GAUGE]: 'gauge',
};

let otel: OtelMemory;
const published: Record<string, unknown>[] = [];
const onEvent = (event: unknown) => published.push(event as Record<string, unknown>);
beforeAll(() => {
  otel = installOtelMemory();
  subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
});
afterAll(async () => {
  unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
  await otel.close();
});

/**
 * Everything the module emits, made to happen for real where a test can: exchanges that succeed and fail (a named
 * integration among them), a 401 re-send that works and one that is refused again, a re-send after a 503 and one
 * the retry budget refuses, a rotation, a certificate close
 * to expiry, and user sign-in's code exchange, refresh and a refused refresh. The store lock, whose caller is the
 * shared store, is reported through the same telemetry the module builds.
 */
async function emitEverything(): Promise<Emitted> {
  const clock = new FakeClock(Date.now(), { autoAdvance: true });
  const platform = await PlatformEmulator.start({ now: () => clock.now() });
  const main = await platform.createIntegration();
  const billing = await platform.createIntegration();
  const audit = await platform.createIntegration();
  platform.setIntegrationStatus(audit.machineId, 'Suspended');
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forRoot({ ...main.moduleOptions, clock }),
      PlatformAuthModule.forRoot({
        name: 'billing',
        ...billing.moduleOptions,
        clock,
        retry: { budgetPercent: 0, budgetMinPerMinute: 0 },
      }),
      PlatformAuthModule.forRoot({
        name: 'audit',
        ...audit.moduleOptions,
        clock,
        exchange: { retry: { maxAttempts: 1 } },
      }),
    ],
  }).compile();
  await moduleRef.init();
  const tokens = (name?: string) => moduleRef.get<TokenProvider>(getTokenProviderToken(name));
  const http = (name?: string) => moduleRef.get<PlatformHttpService>(getPlatformHttpServiceToken(name));
  try {
    platform.revokeToken(await tokens().getAccessToken());
    await firstValueFrom(http().get('/api/billing')); // 401, renewed, re-sent: 200
    await tokens('billing').getAccessToken();
    platform.injectFault({ kind: 'status', status: 401 }, 'api');
    platform.injectFault({ kind: 'status', status: 401 }, 'api');
    await firstValueFrom(http('billing').get('/api/billing')).catch(() => undefined); // refused again
    platform.injectFault({ kind: 'status', status: 503 }, 'api');
    await firstValueFrom(http().get('/api/billing')); // 503, re-sent: 200
    platform.injectFault({ kind: 'status', status: 503 }, 'api');
    await firstValueFrom(http('billing').get('/api/billing')).catch(() => undefined); // a budget of none
    await expect(tokens('audit').getAccessToken()).rejects.toBeInstanceOf(TokenExchangeError);
    await tokens('billing').rotateCredentials({
      key: { privateKey: billing.privateKeyPem, certificate: billing.certificatePem },
    });
    const store = await PlatformAuthTelemetry.load({ integration: 'store', name: 'billing' }, clock);
    store.storeLock('acquired');
    // The rate limit's: a request that waited, and the fallback to a replica's share and back.
    store.rateLimitWait(250);
    store.rateLimitMode('fallback');
    store.rateLimitMode('shared');
    store.close();
    const metrics = await otel.collect(); // the gauges, while tokens are cached
    clock.advance(340 * DAY); // the certificate's expiry warnings start 30 days before
    await signInAndRefresh();
    const all = new Map([...metrics, ...(await otel.collect())]);
    return { spans: emittedSpans(), metrics: emittedMetrics(all), events: publishedEvents() };
  } finally {
    await moduleRef.close();
    await platform.close();
  }
}

async function signInAndRefresh(): Promise<void> {
  const fx = await startUserFixture();
  try {
    const { url, transaction } = await fx.auth.createAuthorizationRequest();
    const callback = await signIn(fx.platform, url);
    const tokens = await fx.auth.completeAuthorization(callback, transaction);
    await fx.auth.refresh(tokens.refreshToken!);
    await fx.auth.refresh('not-a-refresh-token').catch(() => undefined);
    await fx.auth.completeAuthorization(callback, transaction).catch(() => undefined); // the code is used up
  } finally {
    await fx.close();
  }
}

function emittedSpans(): Emitted['spans'] {
  const spans: Emitted['spans'] = new Map();
  for (const span of otel.spans.getFinishedSpans()) {
    const seen = spans.get(span.name) ?? { kind: span.kind, attributes: new Set<string>() };
    for (const key of Object.keys(span.attributes)) seen.attributes.add(key);
    spans.set(span.name, seen);
  }
  return spans;
}

function emittedMetrics(collected: Map<string, MetricData>): Emitted['metrics'] {
  const metrics: Emitted['metrics'] = new Map();
  for (const [name, metric] of collected) {
    const attributes = new Set(metric.dataPoints.flatMap((point) => Object.keys(point.attributes)));
    metrics.set(name, {
      instrument: INSTRUMENT_OF[metric.dataPointType] ?? `data points of type ${metric.dataPointType}`,
      unit: metric.descriptor.unit,
      attributes,
    });
  }
  return metrics;
}

function publishedEvents(): Emitted['events'] {
  const events: Emitted['events'] = new Map();
  for (const event of published) {
    const fields = events.get(String(event.event)) ?? new Set<string>();
    for (const key of Object.keys(event)) if (key !== 'event') fields.add(key);
    events.set(String(event.event), fields);
  }
  return events;
}

describe('the telemetry reference in docs/operations.md', () => {
  let emitted: Emitted;
  const tables = documentedTables();
  beforeAll(async () => {
    emitted = await emitEverything();
  }, 60_000);

  it('lists every span with its kind and attributes', () => {
    const documented = tables
      .get('span')!
      .map(([name, kind, attributes]) => [codeIn(name)[0], kind === 'INTERNAL' ? 0 : kind, sorted(codeIn(attributes))]);
    const actual = [...emitted.spans]
      .filter(([name]) => name.startsWith('platform_auth.'))
      .map(([name, span]) => [name, span.kind, sorted(span.attributes)]);
    expect(sorted(actual.map(([name]) => name as string))).toEqual(sorted(documented.map(([name]) => name as string)));
    expect(actual).toEqual(expect.arrayContaining(documented));
  });

  it('lists every metric with its instrument, unit and attributes; every unit is set', () => {
    const documented = tables
      .get('metric')!
      .map(([name, instrument, unit, attributes]) => [
        codeIn(name)[0],
        instrument,
        codeIn(unit)[0],
        sorted(codeIn(attributes)),
      ]);
    const actual = [...emitted.metrics].map(([name, metric]) => [
      name,
      metric.instrument,
      metric.unit,
      sorted(metric.attributes),
    ]);
    expect(sorted(actual.map(([name]) => name as string))).toEqual(sorted(documented.map(([name]) => name as string)));
    expect(actual).toEqual(expect.arrayContaining(documented));
    for (const [name, metric] of emitted.metrics) expect(metric.unit, name).not.toBe('');
  });

  it('explains every attribute, and each is an OpenTelemetry name or starts with platform_auth.', () => {
    const used = sorted([
      ...[...emitted.spans]
        .filter(([name]) => name.startsWith('platform_auth.'))
        .flatMap(([, span]) => [...span.attributes]),
      ...[...emitted.metrics.values()].flatMap((metric) => [...metric.attributes]),
    ]);
    expect(sorted(tables.get('attribute')!.map(([name]) => codeIn(name)[0]))).toEqual(used);
    for (const key of used)
      expect(key).toMatch(
        /^(platform_auth\.[a-z_.]+|error\.type|http\.response\.status_code|http\.request\.resend_count|server\.address)$/,
      );
  });

  it('lists every diagnostics channel event with its fields', () => {
    const documented = tables.get('event')!.map(([event, fields]) => [codeIn(event)[0], sorted(codeIn(fields))]);
    const actual = [...emitted.events].map(([event, fields]) => [event, sorted(fields)]);
    expect(sorted(actual.map(([event]) => event as string))).toEqual(
      sorted(documented.map(([event]) => event as string)),
    );
    expect(actual).toEqual(expect.arrayContaining(documented));
  });
});
