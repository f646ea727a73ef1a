import type { IncomingMessage, ServerResponse } from 'node:http';
import { http as mswHttp, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { useLoopbackServers } from '../support/loopback-server.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { useMswServer } from '../support/msw-server.js';
import { CLIENTS, inChain, statusOf, type ClientUnderTest } from './clients.js';

const startFixture = usePlatformFixtures();
const server = useLoopbackServers();

/**
 * Callers started in one tick, all in flight before the one exchange (or renewal) ends: a second caller that did not
 * share it would already show as a second exchange. 20, not more: these two cases, once per client, were a third of
 * the file's time at 50, each call a request of its own and, after a revocation, a re-send too.
 */
const CONCURRENT = 20;

/**
 * Every case over a socket to the emulator's own URL, and again through its MSW handlers (`testing/msw`) for each
 * client MSW intercepts: the same verdicts, counters and faults, with no port.
 */
const TRANSPORTS: readonly { name: string; client: ClientUnderTest; throughMsw: boolean }[] = [
  ...CLIENTS.map((client) => ({ name: client.name, client, throughMsw: false })),
  ...CLIENTS.filter((client) => client.interceptedByMsw !== false).map((client) => ({
    name: `${client.name}, through the MSW handlers`,
    client,
    throughMsw: true,
  })),
];

describe.each(TRANSPORTS)('$name', ({ client, throughMsw }) => {
  const msw = throughMsw ? useMswServer() : undefined;
  /** A tenant's client gets the integration as its one tenant. */
  const start = (options: Parameters<typeof startFixture>[0] = {}) =>
    startFixture({ ...options, tenant: client.tenant, msw });
  it('a cold stampede makes one exchange', async () => {
    const f = await start();
    const call = client.bind(f);
    const outcomes = await Promise.all(Array.from({ length: CONCURRENT }, () => call({ url: '/api/billing' })));
    expect(outcomes.map(statusOf)).toEqual(Array(CONCURRENT).fill(200));
    expect(f.platform.counters.exchanges).toMatchObject({ total: 1, accepted: 1 });
  });

  it('a revoked token under concurrent calls: one renewal, every call succeeds', async () => {
    const f = await start();
    const call = client.bind(f);
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const outcomes = await Promise.all(Array.from({ length: CONCURRENT }, () => call({ url: '/api/billing' })));
    expect(outcomes.map(statusOf)).toEqual(Array(CONCURRENT).fill(200));
    expect(f.platform.counters.exchanges.accepted).toBe(2);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: CONCURRENT, ok: CONCURRENT });
  });

  it('a persistent 401 reaches the caller after one re-send', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(401);
    expect(f.platform.counters.apiCalls.total).toBe(2);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('a 403 is not re-sent', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.setPermissions(f.integration.machineId, ['Send message']);
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(403);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, forbidden: 1 });
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });

  it('a foreign origin gets no token', async () => {
    const f = await start();
    const foreign = await server();
    const call = client.bind(f);
    expect(statusOf(await call({ url: `${foreign.url}/elsewhere` }))).toBe(200);
    expect(foreign.requests).toEqual([expect.objectContaining({ url: '/elsewhere', authorization: undefined })]);
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('a URL that starts with an allowed origin but names another host gets no token', async () => {
    const f = await start();
    const foreign = await server();
    const call = client.bind(f);
    const platform = new URL(f.url).origin;
    const foreignHost = new URL(foreign.url).host;
    // Userinfo spelled as the platform's origin; the host is the foreign one. Clients may refuse such a URL.
    await call({ url: `${platform}@${foreignHost}/userinfo` });
    await call({ url: `${platform}:1@${foreignHost}/userinfo-port` });
    for (const seen of foreign.requests) expect(seen.authorization ?? '').not.toMatch(/bearer/i);
    expect(f.platform.counters.exchanges.total).toBe(0);
    expect(f.platform.counters.apiCalls.total).toBe(0);
  });

  it('a redirect to a foreign origin carries no token, and its 401 is not re-sent', async () => {
    const f = await start();
    const foreign = await server((_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_token"}');
    });
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 302, headers: { location: `${foreign.url}/landing` } }, 'api');
    const outcome = await call({ url: '/api/billing' });
    // A client that returns redirects (undici's request without the redirect interceptor) stops at the 302.
    expect([302, 401]).toContain(statusOf(outcome));
    for (const seen of foreign.requests) expect(seen.authorization).toBeUndefined();
    expect(foreign.requests.length).toBeLessThanOrEqual(1);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });

  describe('a redirect chain: a hop carries the token only while every hop before it was at an allowed origin', () => {
    /** The platform's next API answer: a redirect to `location`. */
    const redirectOnce = (f: PlatformFixture, location: string, status = 302) =>
      f.platform.injectFault({ kind: 'status', status, headers: { location } }, 'api');
    /** A foreign origin that sends every request on to `location`. */
    const bouncer = (location: string, status = 302) =>
      server((_req: IncomingMessage, res: ServerResponse) => res.writeHead(status, { location }).end());
    /** What a call that met no token on the hop back can end with: the platform's 401, or a redirect not followed. */
    const UNAUTHENTICATED_OR_UNFOLLOWED = [302, 303, 401];
    /**
     * The platform path a chain comes back to: another URL than the first hop's, which undici's redirect interceptor
     * would take for a loop.
     */
    const BACK = '/api/billing?hop=back';

    it('allowed → allowed: the token on both hops', async () => {
      const f = await start();
      const call = client.bind(f);
      redirectOnce(f, `${f.url}${BACK}`);
      const status = statusOf(await call({ url: '/api/billing' }));
      // undici's request without the redirect interceptor hands the redirect back.
      expect([200, 302]).toContain(status);
      if (status === 200) expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, ok: 1, unauthorized: 0 });
    });

    it('allowed → foreign → allowed: no token on the hop back, and its 401 is not renewed', async () => {
      const f = await start();
      const foreign = await bouncer(`${f.url}${BACK}`);
      const call = client.bind(f);
      redirectOnce(f, `${foreign.url}/bounce`);
      expect(UNAUTHENTICATED_OR_UNFOLLOWED).toContain(statusOf(await call({ url: '/api/billing' })));
      expect(foreign.requests.map((seen) => seen.authorization)).not.toContain(expect.stringMatching(/bearer/i));
      expect(f.platform.counters.apiCalls.ok).toBe(0);
      expect(f.platform.counters.exchanges.accepted).toBe(1);
    });

    it('allowed → foreign → 300 back to an allowed origin: no token on the hop back', async () => {
      const f = await start();
      // undici's redirect interceptor follows 300 as well: the foreign origin's choice must not bring the token back.
      const foreign = await bouncer(`${f.url}${BACK}`, 300);
      const call = client.bind(f);
      redirectOnce(f, `${foreign.url}/bounce`);
      expect([...UNAUTHENTICATED_OR_UNFOLLOWED, 300]).toContain(statusOf(await call({ url: '/api/billing' })));
      expect(f.platform.counters.apiCalls.ok).toBe(0);
      expect(f.platform.counters.exchanges.accepted).toBe(1);
    });

    it('foreign → allowed: a call that starts elsewhere gets no token on the platform', async () => {
      const f = await start();
      const foreign = await bouncer(`${f.url}${BACK}`);
      const call = client.bind(f);
      // Through MSW, fetch's own redirect to the platform is not intercepted and fails: as good as no token.
      const outcome = await call({ url: `${foreign.url}/bounce` });
      if (!('error' in outcome) || !throughMsw) expect(UNAUTHENTICATED_OR_UNFOLLOWED).toContain(statusOf(outcome));
      expect(f.platform.counters.apiCalls.ok).toBe(0);
    });

    it('a 303 back to an allowed origin after leaving carries no token', async () => {
      const f = await start();
      const foreign = await bouncer(`${f.url}${BACK}`, 303);
      const call = client.bind(f);
      redirectOnce(f, `${foreign.url}/bounce`, 307);
      const outcome = await call({ url: '/api/messages', method: 'POST', body: 'json' });
      expect([...UNAUTHENTICATED_OR_UNFOLLOWED, 307]).toContain(statusOf(outcome));
      expect(f.platform.counters.apiCalls.ok).toBe(0);
      expect(f.platform.counters.exchanges.accepted).toBe(1);
    });

    it('a hop whose URL has userinfo gets no token, even on an allowed origin', async () => {
      const f = await start();
      const call = client.bind(f);
      const withUserinfo = new URL(BACK, f.url);
      withUserinfo.username = 'someone';
      withUserinfo.password = 'theirs';
      redirectOnce(f, withUserinfo.href);
      // fetch refuses to follow to a URL with credentials: an error is as good as no token.
      const outcome = await call({ url: '/api/billing' });
      if (!('error' in outcome)) expect(UNAUTHENTICATED_OR_UNFOLLOWED).toContain(outcome.status);
      expect(f.platform.counters.apiCalls.ok).toBe(0);
      expect(f.platform.counters.exchanges.accepted).toBe(1);
    });

    it("the caller's own Authorization is not moved to a foreign hop", async () => {
      const f = await start();
      const foreign = await server();
      const call = client.bind(f);
      redirectOnce(f, `${foreign.url}/landing`);
      await call({ url: '/api/billing', headers: { authorization: 'Basic Y2FsbGVyOm93bg==' } });
      for (const seen of foreign.requests) expect(seen.authorization).toBeUndefined();
    });

    it("a 303 to a foreign origin drops the body with all its Content-* headers, and the caller's cookies and Host", async () => {
      const f = await start();
      const foreign = await server();
      const call = client.bind(f);
      redirectOnce(f, `${foreign.url}/landing`, 303);
      const headers = {
        'content-encoding': 'identity',
        'content-language': 'en',
        'content-location': '/api/messages/draft',
        cookie: 'session=the-callers',
        'proxy-authorization': 'Basic cHJveHk6c2VjcmV0',
        host: new URL(f.url).host,
      };
      const outcome = await call({ url: '/api/messages', method: 'POST', body: 'json', headers });
      // undici's request without the redirect interceptor hands the 303 back.
      if (!('error' in outcome) || !throughMsw) expect([200, 303]).toContain(statusOf(outcome));
      for (const seen of foreign.requests) {
        expect(seen.method).toBe('GET');
        const kept = Object.keys(seen.headers).filter((name) => /^content-|^cookie$|^proxy-authorization$/.test(name));
        expect(kept).toEqual([]);
        expect(seen.headers.host).toBe(new URL(foreign.url).host);
      }
    });

    if (throughMsw)
      it('https → http on the same host is another origin: no token on the downgraded hop', async () => {
        const f = await start();
        const call = client.bind(f);
        const downgraded: (string | null)[] = [];
        const clear = new URL('/api/billing', f.url);
        clear.protocol = 'http:';
        msw!.use(
          mswHttp.all(`${clear.origin}/*`, ({ request }) => {
            downgraded.push(request.headers.get('authorization'));
            return HttpResponse.json({ ok: true });
          }),
        );
        redirectOnce(f, clear.href);
        await call({ url: '/api/billing' });
        expect(downgraded.length).toBeLessThanOrEqual(1);
        for (const seen of downgraded) expect(seen).toBeNull();
      });
  });

  it('a transient 503 at the token endpoint is retried within the exchange', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.injectFault({ kind: 'status', status: 503 }, 'token');
    expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
    expect(f.platform.counters.exchanges).toMatchObject({ faulted: 1, accepted: 1 });
  });

  it('invalid_client fails the call with a TokenExchangeError, and nothing is sent', async () => {
    const f = await start();
    const call = client.bind(f);
    f.platform.setIntegrationStatus(f.integration.machineId, 'Inactive');
    const outcome = await call({ url: '/api/billing' });
    expect('error' in outcome).toBe(true);
    const error = inChain((outcome as { error: unknown }).error, TokenExchangeError);
    expect(error?.code).toBe('PLATFORM_AUTH_TOKEN_EXCHANGE');
    expect(f.platform.counters.apiCalls.total).toBe(0);
  });

  it('short token lifetimes: an expired token is replaced before it is sent', async () => {
    const f = await start({ emulator: { tokenLifetimeSeconds: 90 } });
    const call = client.bind(f);
    for (let round = 0; round < 3; round++) {
      expect(statusOf(await call({ url: '/api/billing' }))).toBe(200);
      f.clock.advance(91_000);
    }
    expect(f.platform.counters.exchanges.accepted).toBe(3);
    expect(f.platform.counters.apiCalls.unauthorized).toBe(0);
  });

  it('a streamed body is not re-sent after a 401', async () => {
    const f = await start();
    const call = client.bind(f);
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    expect(statusOf(await call({ url: '/api/messages', method: 'POST', body: 'stream' }))).toBe(401);
    expect(f.platform.counters.apiCalls.total).toBe(1);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });

  it('what reaches the caller carries no token: a refused response, a dropped connection', async () => {
    const f = await start();
    const call = client.bind(f);
    const first = await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 401 }, 'api');
    f.platform.injectFault({ kind: 'status', status: 401 }, 'api');
    const refused = await call({ url: '/api/billing' });
    expect(statusOf(refused)).toBe(401);
    const second = await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'drop' }, 'api');
    const dropped = await call({ url: '/api/billing', retry: false });
    expect('error' in dropped).toBe(true);
    expectNoSecrets(refused, [first, second]);
    expectNoSecrets(dropped, [first, second]);
  });
});
