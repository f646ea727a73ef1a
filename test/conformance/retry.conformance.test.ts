import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  PlatformUnavailableError,
  type PlatformAuthDiagnosticsEvent,
} from 'nestjs-platform-auth';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { useLoopbackServers } from '../support/loopback-server.js';
import { CLIENTS, inChain, statusOf } from './clients.js';

const startFixture = usePlatformFixtures();
const server = useLoopbackServers();

/** The retry events published while a test runs. */
const events: PlatformAuthDiagnosticsEvent[] = [];
const record = (event: unknown) => {
  const { event: name } = event as PlatformAuthDiagnosticsEvent;
  if (name.startsWith('call:')) events.push(event as PlatformAuthDiagnosticsEvent);
};
subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, record);
afterEach(() => {
  events.length = 0;
});

/**
 * An allowed origin beside the emulator that answers from a script, one status per request, and records the
 * idempotency key of each (in `header`, lower case): the emulator's API does not show the headers it received.
 */
async function scriptedOrigin(statuses: number[], header = 'idempotency-key') {
  const keys: (string | undefined)[] = [];
  const origin = await server((req: IncomingMessage, res: ServerResponse) => {
    keys.push(req.headers[header] as string | undefined);
    res.writeHead(statuses.shift() ?? 200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  return { origin, keys };
}

describe.each(CLIENTS)('$name', (client) => {
  /** A tenant's client gets the integration as its one tenant. */
  const start = (options: Parameters<typeof startFixture>[0] = {}) =>
    startFixture({ ...options, tenant: client.tenant });
  it('a 429 with Retry-After in seconds is re-sent after that wait on the clock', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': '7' } }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, faulted: 1, ok: 1 });
    expect(f.clock.sleeps).toContain(7_000);
  });

  it('a 429 with Retry-After as an HTTP date is re-sent at that time', async () => {
    const f = await start();
    const call = client.bind(f);
    const at = new Date(Math.ceil(f.clock.now() / 1000) * 1000 + 12_000);
    f.platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': at.toUTCString() } }, 'api');
    const before = f.clock.now();
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
    expect(f.clock.sleeps).toContain(at.getTime() - before);
  });

  it('a 503, then a 502 and a 504, are re-sent until the answer is good', async () => {
    const f = await start({ module: { retry: { maxAttempts: 4 } } });
    const call = client.bind(f);
    for (const status of [503, 502, 504]) f.platform.injectFault({ kind: 'status', status }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 4, faulted: 3, ok: 1 });
    expect(events).toEqual([
      expect.objectContaining({ event: 'call:retry', reason: 'unavailable', resendCount: 1 }),
      expect.objectContaining({ event: 'call:retry', reason: 'bad_gateway', resendCount: 2 }),
      expect.objectContaining({ event: 'call:retry', reason: 'gateway_timeout', resendCount: 3 }),
    ]);
  });

  it('a connection dropped before any response is re-sent', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'drop' }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, ok: 1 });
    expect(events).toEqual([expect.objectContaining({ reason: 'connection_failed', resendCount: 1 })]);
  });

  it('a POST without an idempotency key is not re-sent', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect(statusOf(await call({ url: '/api/messages', method: 'POST', body: 'json' }))).toBe(503);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  // Each client gets the one case that fits how it sends bodies, rather than a skipped case beside it.
  if (client.replaysBodies !== false)
    it('a POST with a key is re-sent with the same key every time, the re-send after a 401 included', async () => {
      const { origin, keys } = await scriptedOrigin([401, 503, 200]);
      const f = await start({ module: { allowedOrigins: [origin.url], idempotencyKey: {} } });
      const call = client.bind(f);
      await f.tokens.getAccessToken();
      expect(statusOf(await call({ url: `${origin.url}/messages`, method: 'POST', body: 'json' }))).toBe(200);
      expect(keys).toHaveLength(3);
      expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Set(keys)).toEqual(new Set([keys[0]]));
      expect(f.platform.counters.exchanges.accepted).toBe(2);
    });
  else
    it('a POST carries a key, and its body, a stream by now, is not re-sent', async () => {
      const { origin, keys } = await scriptedOrigin([503, 200]);
      const f = await start({ module: { allowedOrigins: [origin.url], idempotencyKey: {} } });
      const call = client.bind(f);
      expect(statusOf(await call({ url: `${origin.url}/messages`, method: 'POST', body: 'json' }))).toBe(503);
      expect(keys).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    });

  it("the caller's own key is kept, and each call has its own", async () => {
    const { origin, keys } = await scriptedOrigin([503, 200, 200]);
    const f = await start({ module: { allowedOrigins: [origin.url], idempotencyKey: {} } });
    const call = client.bind(f);
    const headers = { 'Idempotency-Key': 'order-42' };
    const first = await call({ url: `${origin.url}/messages`, method: 'POST', body: 'json', headers });
    const second = await call({ url: `${origin.url}/messages`, method: 'POST', body: 'json' });
    const sends = client.replaysBodies === false ? 1 : 2;
    expect([statusOf(first), statusOf(second)]).toEqual([sends === 2 ? 200 : 503, 200]);
    expect(keys.slice(0, sends)).toEqual(Array(sends).fill('order-42'));
    expect(keys[sends]).toMatch(/^[0-9a-f-]{36}$/);
  });

  const ownKey = {
    url: '/api/messages',
    method: 'POST',
    body: 'json',
    headers: { 'idempotency-KEY': 'order-42' },
  } as const;
  if (client.replaysBodies !== false)
    it("a POST with the caller's own Idempotency-Key is re-sent once with that key, with idempotencyKey unset", async () => {
      const f = await start();
      const call = client.bind(f);
      f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
      expect(statusOf(await call(ownKey))).toBe(202);
      expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, faulted: 1, ok: 1 });
      expect(events).toEqual([expect.objectContaining({ reason: 'unavailable', resendCount: 1 })]);
      // The platform's journal took the caller's key: sent again with it, the message is answered from the journal.
      expect(f.platform.counters.idempotency).toEqual({ keys: 1, duplicates: 0, mismatches: 0 });
      expect(statusOf(await call(ownKey))).toBe(202);
      expect(f.platform.counters.idempotency).toEqual({ keys: 1, duplicates: 1, mismatches: 0 });
    });
  else
    it("a POST with the caller's own Idempotency-Key, its body a stream by now, is not re-sent", async () => {
      const f = await start();
      const call = client.bind(f);
      f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
      expect(statusOf(await call(ownKey))).toBe(503);
      expect(f.platform.counters.apiCalls.total).toBe(1);
    });

  it("a PATCH with the caller's own key in the configured header is re-sent with it, and gets no second key", async () => {
    const { origin, keys } = await scriptedOrigin([503, 502, 200], 'x-request-key');
    const f = await start({
      module: { allowedOrigins: [origin.url], idempotencyKey: { header: 'X-Request-Key', methods: ['POST'] } },
    });
    const call = client.bind(f);
    const headers = { 'x-request-KEY': 'patch-7' };
    expect(statusOf(await call({ url: `${origin.url}/orders/7`, method: 'PATCH', headers }))).toBe(200);
    expect(keys).toEqual(['patch-7', 'patch-7', 'patch-7']);
    const plain = await scriptedOrigin([503, 200]);
    const g = await start({ module: { allowedOrigins: [plain.origin.url] } });
    expect(statusOf(await client.bind(g)({ url: `${plain.origin.url}/orders/7`, method: 'PATCH' }))).toBe(503);
    expect(plain.keys).toEqual([undefined]);
  });

  it('retry: false on the request returns the first transient answer', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect(statusOf(await call({ url: '/api/billing', retry: false }))).toBe(503);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it('maxAttempts bounds the sends of one call', async () => {
    const f = await start({ module: { retry: { maxAttempts: 2 } } });
    const call = client.bind(f);
    for (let i = 0; i < 3; i += 1) f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(503);
    expect(f.platform.counters.apiCalls.total).toBe(2);
  });

  it('a Retry-After beyond maxDelayMs fails at once with a PlatformUnavailableError that says when', async () => {
    const f = await start({ module: { retry: { maxDelayMs: 60_000 } } });
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 429, headers: { 'Retry-After': '120' } }, 'api');
    const now = f.clock.now();
    const outcome = await call({ url: '/api/billing?token=query-text' });
    const error = inChain((outcome as { error?: unknown }).error, PlatformUnavailableError);
    expect(error).toMatchObject({ code: 'PLATFORM_AUTH_PLATFORM_UNAVAILABLE', status: 429, retryAfterMs: 120_000 });
    expect(error?.availableAtMs).toBe(now + 120_000);
    expect(error?.message).toContain(new Date(now + 120_000).toISOString());
    expect(error?.message).not.toContain('query-text');
    expect(f.platform.counters.apiCalls.total).toBe(1);
    expect(f.clock.sleeps).not.toContain(120_000);
  });

  it('an exhausted retry budget stops re-sends and says so once', async () => {
    const f = await start({ module: { retry: { budgetPercent: 0, budgetMinPerMinute: 1 } } });
    const call = client.bind(f);
    for (let i = 0; i < 4; i += 1) f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(503);
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(503);
    expect(f.platform.counters.apiCalls.total).toBe(3);
    expect(events.map((event) => event.event)).toEqual(['call:retry', 'call:retry-budget-exhausted']);
  });

  it('a re-send after a 401 that loses its connection is sent again with the fresh token', async () => {
    const sentTokens: (string | undefined)[] = [];
    const origin = await server((req: IncomingMessage, res: ServerResponse) => {
      sentTokens.push(req.headers.authorization);
      if (sentTokens.length === 1) res.writeHead(401).end();
      else if (sentTokens.length === 2) res.socket?.resetAndDestroy();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const f = await start({ module: { allowedOrigins: [origin.url] } });
    const call = client.bind(f);
    await f.tokens.getAccessToken();
    expect(statusOf(await call({ url: `${origin.url}/billing` }))).toBe(200);
    expect(sentTokens).toHaveLength(3);
    expect(sentTokens[1]).not.toBe(sentTokens[0]);
    expect(sentTokens[2]).toBe(sentTokens[1]);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('a streamed body is never re-sent', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect(statusOf(await call({ url: '/api/billing', method: 'PUT', body: 'stream' }))).toBe(503);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });
});

afterAll(() => {
  unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, record);
});
