import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { firstValueFrom } from 'rxjs';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { repositoryRoot } from '../support/docs-blocks.js';
import { startPlatformFixture } from '../support/platform-fixture.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import {
  integrationHash,
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  TELEMETRY_ATTRIBUTES as ATTR,
  TELEMETRY_NAMES,
} from '../../lib/telemetry/telemetry.events.js';
import type { PlatformAuthDiagnosticsEvent } from 'nestjs-platform-auth';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import type { ExchangeOutcome } from '../../lib/token/token.cache.js';
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
const identity = { integration, serverAddress: 'platform.example' };

/** An exchange that takes `ms` on the fake clock and ends with `outcome`. */
function exchangeTaking(clock: FakeClock, ms: number, outcome: ExchangeOutcome): () => Promise<ExchangeOutcome> {
  return () => {
    clock.advance(ms);
    return Promise.resolve(outcome);
  };
}

function success(clock: FakeClock, attempts = 1): ExchangeOutcome {
  const now = clock.now();
  return {
    ok: true,
    attempts,
    token: { accessToken: 'secret-access-token', tokenType: 'Bearer', issuedAtMs: now, expiresAtMs: now + 600_000 },
  };
}

function refusal(status: number, attempts = 1): ExchangeOutcome {
  return {
    ok: false,
    error: new TokenExchangeError('The platform refused the assertion', {
      reason: 'http_error',
      transient: false,
      status,
      oauthError: 'invalid_client',
      attempts,
      retried: attempts > 1,
      hint: 'check the thumbprint',
    }),
  };
}

describe('telemetry with @opentelemetry/api installed', () => {
  it("adds the integration's name to every attribute set: its own for a named one, 'default' for the default one", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const named = await PlatformAuthTelemetry.load({ ...identity, name: 'billing' }, clock);
    await named.recordExchange(exchangeTaking(clock, 0, success(clock)));
    const unnamed = await PlatformAuthTelemetry.load(identity, clock);
    await unnamed.recordExchange(exchangeTaking(clock, 0, success(clock)));
    const points = (await otel.collect()).get(TELEMETRY_NAMES.exchanges)!.dataPoints.map((p) => p.attributes);
    expect(points).toEqual(
      expect.arrayContaining([
        {
          [ATTR.integration]: integration,
          [ATTR.integrationName]: 'billing',
          [ATTR.serverAddress]: 'platform.example',
          [ATTR.outcome]: 'success',
        },
        {
          [ATTR.integration]: integration,
          [ATTR.integrationName]: 'default',
          [ATTR.serverAddress]: 'platform.example',
          [ATTR.outcome]: 'success',
        },
      ]),
    );
    named.close();
    unnamed.close();
  });

  it('counts exchanges with a unit, failures by error.type and status, and times them in seconds', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(identity, clock);
    await telemetry.recordExchange(exchangeTaking(clock, 250, success(clock)));
    await telemetry.recordExchange(exchangeTaking(clock, 1_500, refusal(400)));

    const collected = await otel.collect();
    const exchanges = collected.get(TELEMETRY_NAMES.exchanges)!;
    expect(exchanges.descriptor.unit).toBe('{exchange}');
    const common = {
      [ATTR.integration]: integration,
      [ATTR.integrationName]: 'default',
      [ATTR.serverAddress]: 'platform.example',
    };
    expect(exchanges.dataPoints.map((point) => [point.attributes, point.value])).toEqual(
      expect.arrayContaining([
        [{ ...common, [ATTR.outcome]: 'success' }, 1],
        [{ ...common, [ATTR.outcome]: 'failure', [ATTR.errorType]: 'http_error', [ATTR.statusCode]: 400 }, 1],
      ]),
    );
    const duration = collected.get(TELEMETRY_NAMES.exchangeDuration)!;
    expect(duration.descriptor.unit).toBe('s');
    const sums = duration.dataPoints.map((point) => (point.value as { sum: number }).sum).sort();
    expect(sums).toEqual([0.25, 1.5]);
    telemetry.close();
  });

  it('gives every exchange one INTERNAL span with its attempts, outcome and, on failure, error.type', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(identity, clock);
    await telemetry.recordExchange(exchangeTaking(clock, 10, success(clock, 2)));
    await telemetry.recordExchange(exchangeTaking(clock, 10, refusal(401, 1)));
    const [ok, failed] = otel.spans.getFinishedSpans();
    expect([ok.name, ok.kind, failed.name, failed.kind]).toEqual([
      TELEMETRY_NAMES.exchangeSpan,
      0,
      TELEMETRY_NAMES.exchangeSpan,
      0,
    ]);
    expect(ok.attributes).toEqual({
      [ATTR.integration]: integration,
      [ATTR.integrationName]: 'default',
      [ATTR.serverAddress]: 'platform.example',
      [ATTR.attempts]: 2,
      [ATTR.outcome]: 'success',
    });
    expect(ok.status.code).toBe(0);
    expect(failed.attributes).toMatchObject({
      [ATTR.attempts]: 1,
      [ATTR.outcome]: 'failure',
      [ATTR.errorType]: 'http_error',
      [ATTR.statusCode]: 401,
    });
    expect(failed.status).toEqual({ code: 2, message: 'http_error' });
    telemetry.close();
  });

  it('counts an exchange that could not even sign as a failure of type signing_failed, and rethrows', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(identity, clock);
    const broken = new Error('the key is gone');
    await expect(telemetry.recordExchange(() => Promise.reject(broken))).rejects.toBe(broken);
    const [span] = otel.spans.getFinishedSpans();
    expect(span.attributes).toMatchObject({ [ATTR.errorType]: 'signing_failed', [ATTR.attempts]: 0 });
    const point = (await otel.collect()).get(TELEMETRY_NAMES.exchanges)!.dataPoints[0];
    expect(point.attributes[ATTR.errorType]).toBe('signing_failed');
    telemetry.close();
  });

  it('reports token and certificate time to expiry as gauges, store lock and credential outcomes as counters', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(identity, clock);
    telemetry.observe({
      tokenExpiresAtMs: () => Date.UTC(2026, 0, 1) + 600_000,
      certificateNotAfterMs: () => clock.now() + 10 * 86_400_000,
    });
    telemetry.storeLock('acquired');
    telemetry.storeLock('timeout');
    telemetry.credentialsChanged('rejected');
    const collected = await otel.collect();
    expect(collected.get(TELEMETRY_NAMES.tokenTimeToExpiry)!.dataPoints[0].value).toBe(600);
    expect(collected.get(TELEMETRY_NAMES.certificateTimeToExpiry)!.dataPoints[0].value).toBe(864_000);
    const lock = collected.get(TELEMETRY_NAMES.storeLock)!;
    expect(lock.descriptor.unit).toBe('{attempt}');
    expect(lock.dataPoints.map((p) => p.attributes[ATTR.storeLockOutcome]).sort()).toEqual(['acquired', 'timeout']);
    const changes = collected.get(TELEMETRY_NAMES.credentialChanges)!;
    expect(changes.descriptor.unit).toBe('{change}');
    expect(changes.dataPoints[0].attributes).toEqual({
      [ATTR.integration]: integration,
      [ATTR.integrationName]: 'default',
      [ATTR.credentialsOutcome]: 'rejected',
    });

    telemetry.close(); // a destroyed module's callbacks are no longer called
    clock.advance(100_000);
    const after = await otel.collect();
    const values = after.get(TELEMETRY_NAMES.tokenTimeToExpiry)?.dataPoints.map((point) => point.value) ?? [];
    expect(values).not.toContain(500);
  });

  it('publishes the same events on the diagnostics channel, identified by the hash only', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = await PlatformAuthTelemetry.load(identity, clock);
    await telemetry.recordExchange(exchangeTaking(clock, 0, refusal(503, 3)));
    await telemetry.reauthenticate(() => Promise.resolve({ status: 200 }));
    telemetry.credentialsChanged('rejected');
    expect(events).toEqual([
      { integration, event: 'exchange:start' },
      {
        integration,
        event: 'exchange:end',
        outcome: 'failure',
        reason: 'http_error',
        status: 503,
        attempts: 3,
        durationMs: 0,
      },
      { integration, event: 'reauthentication' },
      { integration, event: 'credentials', outcome: 'rejected' },
    ]);
    expect(integration).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(events)).not.toContain('machine-1');
  });

  it('describes each exchange at debug level, without the token', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const logger = new CapturingLogger();
    const telemetry = await PlatformAuthTelemetry.load({ ...identity, logger }, clock);
    await telemetry.recordExchange(exchangeTaking(clock, 120, success(clock)));
    await telemetry.recordExchange(exchangeTaking(clock, 2_000, refusal(400, 1)));
    expect(logger.lines).toEqual([
      {
        level: 'debug',
        message: 'Token exchange succeeded (1 attempt, 0.120 s); the token is valid for 600 s',
      },
      { level: 'debug', message: 'Token exchange failed: http_error, HTTP 400 (1 attempt, 2.000 s)' },
    ]);
    telemetry.close();
  });

  it('without OpenTelemetry in use (channel only) still runs the exchange and the re-send, and logs nothing', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const telemetry = PlatformAuthTelemetry.channelOnly(integration, clock);
    const outcome = success(clock);
    await expect(telemetry.recordExchange(() => Promise.resolve(outcome))).resolves.toBe(outcome);
    await expect(telemetry.reauthenticate(() => Promise.resolve({ status: 204 }))).resolves.toEqual({ status: 204 });
    expect(otel.spans.getFinishedSpans()).toEqual([]);
    expect(events.map((event) => event.event)).toEqual(['exchange:start', 'exchange:end', 'reauthentication']);
  });
});

describe('telemetry through the module', () => {
  it("records real exchanges and 401 re-authentications, identified by the integration's hash and name", async () => {
    const f = await startPlatformFixture();
    try {
      const token = await f.tokens.getAccessToken();
      f.platform.revokeToken(token); // the platform answers 401; the interceptor renews and re-sends once
      await firstValueFrom(f.http.get('/api/billing'));
      const collected = await otel.collect();
      const expected = integrationHash(`${f.platform.url}/loginservice/connect/token`, f.integration.machineId);
      const exchanges = collected.get(TELEMETRY_NAMES.exchanges)!.dataPoints;
      expect(exchanges.map((point) => [point.attributes, point.value])).toStrictEqual([
        [
          {
            [ATTR.integration]: expected,
            [ATTR.integrationName]: 'default',
            [ATTR.serverAddress]: '127.0.0.1',
            [ATTR.outcome]: 'success',
          },
          2,
        ],
      ]);
      const reauthentications = collected.get(TELEMETRY_NAMES.reauthentications)!;
      expect(reauthentications.descriptor.unit).toBe('{request}');
      expect(reauthentications.dataPoints.map((point) => [point.attributes, point.value])).toEqual([
        [{ [ATTR.integration]: expected, [ATTR.integrationName]: 'default', [ATTR.outcome]: 'success' }, 1],
      ]);
      const remaining = collected.get(TELEMETRY_NAMES.tokenTimeToExpiry)!.dataPoints[0].value as number;
      expect(remaining).toBeGreaterThan(590);
      const spans = otel.spans.getFinishedSpans();
      expect(spans.map((span) => span.name).sort()).toEqual([
        TELEMETRY_NAMES.reauthenticationSpan,
        TELEMETRY_NAMES.exchangeSpan,
        TELEMETRY_NAMES.exchangeSpan,
      ]);
      const { version } = JSON.parse(readFileSync(`${repositoryRoot}/package.json`, 'utf8')) as { version: string };
      expect(new Set(spans.map(({ instrumentationScope: scope }) => `${scope.name} ${scope.version}`))).toEqual(
        new Set([`${TELEMETRY_NAMES.meter} ${version}`]),
      );
      const rendered = JSON.stringify({
        metrics: [...collected.values()],
        events,
        spans: spans.map((s) => s.attributes),
      });
      expect(rendered).not.toContain(f.integration.machineId);
      expect(rendered).not.toContain(token);
      expect(events.filter((event) => event.event === 'reauthentication')).toHaveLength(1);
    } finally {
      await f.close();
    }
  });
});
