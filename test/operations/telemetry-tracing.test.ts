import { SpanKind, trace } from '@opentelemetry/api';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TELEMETRY_ATTRIBUTES as ATTR, TELEMETRY_NAMES } from '../../lib/telemetry/telemetry.events.js';
import { installOtelMemory, type OtelMemory } from '../support/otel-memory.js';
import { startPlatformFixture, type PlatformFixture } from '../support/platform-fixture.js';
import { signIn, startUserFixture } from '../user/user-test-kit.js';

/*
 * What an app with the OpenTelemetry Node SDK sees: the AsyncLocalStorage context manager and the real HTTP
 * instrumentations: `http`'s makes a CLIENT span for every outgoing request (the token POSTs and the API calls) and a
 * SERVER span for every request the emulator receives in this process; undici's a CLIENT span for every `fetch`
 * (user sign-in's token requests, made by oauth4webapi).
 */
let otel: OtelMemory;
let instrumentations: { disable(): void }[];
beforeAll(() => {
  otel = installOtelMemory();
  instrumentations = [new HttpInstrumentation(), new UndiciInstrumentation()];
});
afterAll(async () => {
  for (const instrumentation of instrumentations) instrumentation.disable();
  await otel.close();
});

const fixtures: PlatformFixture[] = [];
afterEach(async () => {
  for (const fixture of fixtures.splice(0)) await fixture.close();
  otel.spans.reset();
});

async function fixture(): Promise<PlatformFixture> {
  const started = await startPlatformFixture();
  fixtures.push(started);
  return started;
}

/** Runs `work` inside a span of the caller's own, as a controller's span from the app's instrumentation would be. */
function asCaller<T>(work: () => Promise<T>): Promise<T> {
  return trace.getTracer('the app').startActiveSpan('caller', async (span) => {
    try {
      return await work();
    } finally {
      span.end();
    }
  });
}

function spans(): ReadableSpan[] {
  return otel.spans.getFinishedSpans();
}
const named = (name: string) => spans().filter((span) => span.name === name);
/** The outgoing HTTP requests of the process, by method (the instrumentation names CLIENT spans by method). */
const clientSpans = (method: string) => spans().filter((span) => span.kind === SpanKind.CLIENT && span.name === method);
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('tracing with the HTTP instrumentation', () => {
  it("makes the token POSTs children of the exchange span, and the exchange a child of the caller's span", async () => {
    const f = await fixture();
    f.platform.injectFault({ kind: 'status', status: 503 }); // the first attempt fails, the second succeeds
    await asCaller(() => f.tokens.getAccessToken());

    const [caller] = named('caller');
    const [exchange] = named(TELEMETRY_NAMES.exchangeSpan);
    expect(exchange.kind).toBe(SpanKind.INTERNAL); // the HTTP attempts are the CLIENT spans
    expect(parentOf(exchange)).toBe(idOf(caller));
    expect(exchange.attributes).toMatchObject({ [ATTR.attempts]: 2, [ATTR.outcome]: 'success' });
    const posts = clientSpans('POST');
    expect(posts).toHaveLength(2);
    expect(posts.map(parentOf)).toEqual([idOf(exchange), idOf(exchange)]);
    expect(posts.map((post) => post.attributes['http.response.status_code'])).toEqual([503, 200]);
  });

  it('keeps the attempts of two exchanges apart', async () => {
    const f = await fixture();
    await asCaller(() => f.tokens.getAccessToken());
    f.tokens.invalidate(await f.tokens.getAccessToken());
    f.clock.advance(60_000); // past the minimum interval between exchanges
    await asCaller(() => f.tokens.getAccessToken());
    const exchanges = named(TELEMETRY_NAMES.exchangeSpan);
    expect(exchanges).toHaveLength(2);
    const posts = clientSpans('POST');
    expect(posts.map(parentOf).sort()).toEqual(exchanges.map(idOf).sort());
  });

  it('shows a 401 re-send on the caller trace: its own span around the renewal and the second request', async () => {
    const f = await fixture();
    const stale = await f.tokens.getAccessToken();
    f.platform.revokeToken(stale); // the platform answers 401; the interceptor renews and re-sends once
    otel.spans.reset();
    const response = await asCaller(() => firstValueFrom(f.http.get('/api/billing')));
    expect(response.status).toBe(200);

    const [caller] = named('caller');
    const [reauthentication] = named(TELEMETRY_NAMES.reauthenticationSpan);
    const [exchange] = named(TELEMETRY_NAMES.exchangeSpan);
    const [refused, resent] = clientSpans('GET');
    expect(refused.attributes['http.response.status_code']).toBe(401);
    expect(parentOf(refused)).toBe(idOf(caller));
    expect(reauthentication.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(reauthentication)).toBe(idOf(caller));
    expect(reauthentication.attributes).toMatchObject({ [ATTR.outcome]: 'success', [ATTR.statusCode]: 200 });
    expect(parentOf(exchange)).toBe(idOf(reauthentication));
    expect(parentOf(resent)).toBe(idOf(reauthentication));
    expect(resent.attributes['http.response.status_code']).toBe(200);
    expect(clientSpans('POST').map(parentOf)).toEqual([idOf(exchange)]);
  });

  it('marks a re-send that is refused again as failed, with the status as error.type', async () => {
    const f = await fixture();
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    const failure = await asCaller(() => firstValueFrom(f.http.get('/api/billing'))).catch((error: unknown) => error);
    expect((failure as { response?: { status: number } }).response?.status).toBe(401);
    const [reauthentication] = named(TELEMETRY_NAMES.reauthenticationSpan);
    expect(reauthentication.attributes).toMatchObject({
      [ATTR.outcome]: 'failure',
      [ATTR.errorType]: '401',
      [ATTR.statusCode]: 401,
    });
    expect(reauthentication.status.code).toBe(2);
  });
});

describe('tracing user sign-in with the fetch (undici) instrumentation', () => {
  it('gives the code exchange and the refresh a span each, parent of their token request', async () => {
    const fx = await startUserFixture();
    try {
      const { url, transaction } = await fx.auth.createAuthorizationRequest();
      const callback = await signIn(fx.platform, url);
      otel.spans.reset();
      const tokens = await asCaller(() => fx.auth.completeAuthorization(callback, transaction));
      await asCaller(() => fx.auth.refresh(tokens.refreshToken!));
      const refused = await asCaller(() => fx.auth.refresh('not-a-refresh-token')).catch((error: unknown) => error);
      expect(refused).toMatchObject({ reason: 'invalid_grant' });

      const [codeExchange] = named(TELEMETRY_NAMES.userCodeExchangeSpan);
      const [refresh, failedRefresh] = named(TELEMETRY_NAMES.userRefreshSpan);
      const callers = named('caller').map(idOf);
      expect([codeExchange, refresh, failedRefresh].map(parentOf)).toEqual(callers);
      expect(codeExchange.kind).toBe(SpanKind.INTERNAL);
      expect(codeExchange.attributes).toEqual({
        [ATTR.serverAddress]: '127.0.0.1',
        [ATTR.userGrantType]: 'authorization_code',
        [ATTR.outcome]: 'success',
      });
      expect(refresh.attributes).toMatchObject({ [ATTR.userGrantType]: 'refresh_token', [ATTR.outcome]: 'success' });
      expect(failedRefresh.attributes).toMatchObject({
        [ATTR.outcome]: 'failure',
        [ATTR.errorType]: 'invalid_grant',
        [ATTR.statusCode]: 400,
      });
      expect(failedRefresh.status.code).toBe(2);
      // Each token request (a fetch) is a CLIENT span under its own sign-in span.
      const posts = clientSpans('POST');
      expect(posts.map(parentOf).sort()).toEqual([codeExchange, refresh, failedRefresh].map(idOf).sort());
      const rendered = JSON.stringify(spans().map((span) => span.attributes));
      for (const secret of [tokens.accessToken, tokens.refreshToken!]) expect(rendered).not.toContain(secret);
    } finally {
      await fx.close();
    }
  });
});
