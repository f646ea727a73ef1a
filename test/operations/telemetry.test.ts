import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { firstValueFrom } from 'rxjs';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { startPlatformFixture } from '../support/platform-fixture.js';
import {
  integrationHash,
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  TELEMETRY_NAMES,
  type PlatformAuthDiagnosticsEvent,
} from '../../lib/telemetry/telemetry.events.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { installOtelMemory, type OtelMemory } from '../support/otel-memory.js';

let otel: OtelMemory;
const events: PlatformAuthDiagnosticsEvent[] = [];
const onEvent = (event: unknown) => events.push(event as PlatformAuthDiagnosticsEvent);
beforeEach(() => {
  otel = installOtelMemory();
  events.length = 0;
  subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
});
afterEach(async () => {
  unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
  await otel.close();
});

const integration = integrationHash('https://platform.example/loginservice/connect/token', 'machine-1');

describe('telemetry with @opentelemetry/api installed', () => {
  it('adds the name of a named integration to every attribute set, never for the default one', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const named = await PlatformAuthTelemetry.load(integration, clock, 'billing');
    named.exchangeStarted()({ ok: true, status: 200, attempts: 1 });
    const collected = await otel.collect();
    expect(collected.get(TELEMETRY_NAMES.exchanges)!.dataPoints[0].attributes).toEqual({
      [TELEMETRY_NAMES.integrationAttribute]: integration,
      [TELEMETRY_NAMES.integrationNameAttribute]: 'billing',
      outcome: 'success',
      reason: 'none',
    });
    named.close();
  });

  it('counts exchanges by outcome and reason, records their duration in seconds, one span each', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(integration, clock);
    expect(telemetry.otelEnabled).toBe(true);

    const ok = telemetry.exchangeStarted();
    clock.advance(250);
    expect(ok({ ok: true, status: 200, attempts: 1 })).toBe(250);
    const failed = telemetry.exchangeStarted();
    clock.advance(1_500);
    failed({ ok: false, reason: 'http_error', status: 400, attempts: 1 });

    const collected = await otel.collect();
    const exchanges = collected.get(TELEMETRY_NAMES.exchanges)!;
    expect(exchanges.dataPoints.map((point) => [point.attributes, point.value])).toEqual(
      expect.arrayContaining([
        [{ [TELEMETRY_NAMES.integrationAttribute]: integration, outcome: 'success', reason: 'none' }, 1],
        [{ [TELEMETRY_NAMES.integrationAttribute]: integration, outcome: 'failure', reason: 'http_error' }, 1],
      ]),
    );
    const duration = collected.get(TELEMETRY_NAMES.exchangeDuration)!;
    expect(duration.descriptor.unit).toBe('s');
    const sums = duration.dataPoints.map((point) => (point.value as { sum: number }).sum).sort();
    expect(sums).toEqual([0.25, 1.5]);

    const spans = otel.spans.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual([TELEMETRY_NAMES.exchangeSpan, TELEMETRY_NAMES.exchangeSpan]);
    expect(spans[1].attributes).toMatchObject({
      [TELEMETRY_NAMES.integrationAttribute]: integration,
      'http.response.status_code': 400,
      'error.type': 'http_error',
      'platform_auth.attempts': 1,
    });
    expect(spans[1].status.code).toBe(2);
    telemetry.close();
  });

  it('reports token and certificate time to expiry as gauges, re-authentications and store lock outcomes as counters', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(integration, clock);
    telemetry.observe({
      tokenExpiresAtMs: () => Date.UTC(2026, 0, 1) + 600_000,
      certificateNotAfterMs: () => clock.now() + 10 * 86_400_000,
    });
    telemetry.reauthenticated();
    telemetry.storeLock('acquired');
    telemetry.storeLock('timeout');
    const collected = await otel.collect();
    expect(collected.get(TELEMETRY_NAMES.tokenTimeToExpiry)!.dataPoints[0].value).toBe(600);
    expect(collected.get(TELEMETRY_NAMES.certificateTimeToExpiry)!.dataPoints[0].value).toBe(864_000);
    expect(collected.get(TELEMETRY_NAMES.reauthentications)!.dataPoints[0].value).toBe(1);
    expect(
      collected
        .get(TELEMETRY_NAMES.storeLock)!
        .dataPoints.map((p) => p.attributes.outcome)
        .sort(),
    ).toEqual(['acquired', 'timeout']);

    telemetry.close(); // a destroyed module's callbacks are no longer called
    clock.advance(100_000);
    const after = await otel.collect();
    const values = after.get(TELEMETRY_NAMES.tokenTimeToExpiry)?.dataPoints.map((point) => point.value) ?? [];
    expect(values).not.toContain(500);
  });

  it('publishes the same events on the diagnostics channel, identified by the hash only', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(integration, clock);
    telemetry.exchangeStarted()({ ok: false, reason: 'timeout', attempts: 3 });
    telemetry.reauthenticated();
    telemetry.credentialsChanged('rejected');
    expect(events).toEqual([
      { integration, event: 'exchange:start' },
      {
        integration,
        event: 'exchange:end',
        outcome: 'failure',
        reason: 'timeout',
        status: undefined,
        attempts: 3,
        durationSeconds: 0,
      },
      { integration, event: 'reauthentication' },
      { integration, event: 'credentials', outcome: 'rejected' },
    ]);
    expect(integration).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(events)).not.toContain('machine-1');
  });
});

describe('telemetry through the module', () => {
  it('records real exchanges and 401 re-authentications, identified by the integration hash only', async () => {
    const f = await startPlatformFixture();
    try {
      const token = await f.tokens.getAccessToken();
      f.platform.revokeToken(token); // the platform answers 401; the interceptor renews and re-sends once
      await firstValueFrom(f.http.get('/api/billing'));
      const collected = await otel.collect();
      const expected = integrationHash(`${f.platform.url}/loginservice/connect/token`, f.integration.machineId);
      const exchanges = collected.get(TELEMETRY_NAMES.exchanges)!.dataPoints;
      expect(exchanges.map((point) => [point.attributes[TELEMETRY_NAMES.integrationAttribute], point.value])).toEqual([
        [expected, 2],
      ]);
      expect(collected.get(TELEMETRY_NAMES.reauthentications)!.dataPoints[0].value).toBe(1);
      const remaining = collected.get(TELEMETRY_NAMES.tokenTimeToExpiry)!.dataPoints[0].value as number;
      expect(remaining).toBeGreaterThan(590);
      expect(otel.spans.getFinishedSpans()).toHaveLength(2);
      const rendered = JSON.stringify({
        metrics: [...collected.values()],
        events,
        spans: otel.spans.getFinishedSpans().map((s) => s.attributes),
      });
      expect(rendered).not.toContain(f.integration.machineId);
      expect(rendered).not.toContain(token);
      expect(events.filter((event) => event.event === 'reauthentication')).toHaveLength(1);
    } finally {
      await f.close();
    }
  });
});
