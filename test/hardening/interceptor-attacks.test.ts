import axios, { type AxiosError } from 'axios';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { PlatformAuthInterceptor, TokenExchangeError } from 'nestjs-platform-auth';
import { expectNoSecrets } from '../support/leak-check.js';
import { refusedOrigin, useLoopbackServers } from '../support/loopback-server.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { eventually } from '../support/eventually.js';

const start = usePlatformFixtures();
const server = useLoopbackServers();

function settle<T>(promise: Promise<T>): Promise<unknown> {
  return promise.catch((error: unknown) => error);
}

describe('401 handling cannot be turned into a loop or a stampede', () => {
  it('100 parallel 401s cause one renewal', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const responses = await Promise.all(Array.from({ length: 100 }, () => firstValueFrom(f.http.get('/api/billing'))));
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200));
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('a server that always answers 401 gets each request at most twice', async () => {
    const always401 = await server((_req, res) =>
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer error="invalid_token"' }).end(),
    );
    const f = await start({ module: { allowedOrigins: [always401.origin] } });
    for (let i = 0; i < 10; i += 1) {
      const error = await settle(firstValueFrom(f.http.get(`${always401.url}/r${i}`)));
      expect((error as AxiosError).response?.status).toBe(401);
      const sentTokens = always401.requests.map((r) => r.authorization?.replace(/^Bearer /, ''));
      expectNoSecrets(error, sentTokens);
    }
    expect(always401.requests).toHaveLength(20);
    expect(f.platform.counters.exchanges.accepted).toBeLessThanOrEqual(11);
  });

  it('alternating 401s: every call ends after one re-send', async () => {
    let count = 0;
    const alternating = await server((_req, res) => {
      count += 1;
      res.writeHead(count % 2 === 1 ? 401 : 200).end();
    });
    const f = await start({ module: { allowedOrigins: [alternating.origin] } });
    for (let i = 0; i < 10; i += 1) {
      const response = await firstValueFrom(f.http.get(`${alternating.url}/r${i}`));
      expect(response.status).toBe(200);
    }
    expect(alternating.requests).toHaveLength(20);
  });
});

describe('the token endpoint failing', () => {
  it('platform down during renewal while the old token is valid: callers keep working', async () => {
    const f = await start();
    const first = await f.tokens.getAccessToken();
    f.clock.advance(550_000); // inside the renewal window
    for (let i = 0; i < 8; i += 1) f.platform.injectFault({ kind: 'status', status: 503 });
    for (let i = 0; i < 5; i += 1) {
      const response = await firstValueFrom(f.http.get('/api/billing'));
      expect(response.status).toBe(200);
    }
    await eventually(() => expect(f.platform.counters.exchanges.faulted).toBeGreaterThanOrEqual(4));
    expect(await f.tokens.getAccessToken()).toBe(first);
  });

  it('token endpoint down with no token: callers fail fast, then recover when it returns', async () => {
    const f = await start();
    for (let i = 0; i < 4; i += 1) f.platform.injectFault({ kind: 'drop' });
    const first = await settle(firstValueFrom(f.http.get('/api/billing')));
    expect(first).toBeInstanceOf(TokenExchangeError);
    expect(first).toMatchObject({ reason: 'network_error', attempts: 4 });
    expectNoSecrets(first, []);

    const exchangesSoFar = f.platform.counters.exchanges.total;
    const fast = await Promise.all(
      Array.from({ length: 20 }, () => settle(firstValueFrom(f.http.get('/api/billing')))),
    );
    for (const error of fast) expect(error).toMatchObject({ reason: 'backoff' });
    expect(f.platform.counters.exchanges.total).toBe(exchangesSoFar);
    expect(f.platform.counters.apiCalls.total).toBe(0);

    f.clock.advance(1_001);
    const response = await firstValueFrom(f.http.get('/api/billing'));
    expect(response.status).toBe(200);
  });
});

describe('attempts to move the token off-origin', () => {
  it('absolute URLs to another origin (other port on the same host, other scheme case) get no token', async () => {
    const f = await start();
    const other = await server();
    await firstValueFrom(f.http.get(`${other.url}/absolute`));
    await firstValueFrom(f.http.get(`${other.url.toUpperCase()}/upper-case-scheme`));
    expect(other.requests).toHaveLength(2);
    for (const received of other.requests) expect(received.authorization).toBeUndefined();
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('protocol-relative URLs get no token', async () => {
    const f = await start();
    const other = await server();
    await settle(firstValueFrom(f.http.get(`//${new URL(other.url).host}/protocol-relative`)));
    for (const received of other.requests) expect(received.authorization ?? '').not.toMatch(/bearer/i);
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('userinfo forms (platform@evil, user@platform) get no token', async () => {
    const f = await start();
    const other = await server();
    const platformHost = new URL(f.platform.url).host;
    const otherHost = new URL(other.url).host;
    await settle(firstValueFrom(f.http.get(`http://${platformHost}@${otherHost}/platform-at-evil`)));
    await settle(firstValueFrom(f.http.get(`http://${platformHost}:x@${otherHost}/platform-colon-at-evil`)));
    await settle(firstValueFrom(f.http.get(`http://user:pw@${platformHost}/api/billing`)));
    // axios turns URL userinfo into Basic credentials of the URL's own; what must never arrive is a bearer token.
    for (const received of other.requests) expect(received.authorization ?? '').not.toMatch(/bearer/i);
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('a redirect from the platform origin to another origin loses the token; the allowed hop keeps it', async () => {
    const target = await server();
    const allowedRedirector = await server((_req, res) =>
      res.writeHead(307, { Location: `${target.url}/landed` }).end(),
    );
    const f = await start({ module: { allowedOrigins: [allowedRedirector.origin] } });
    const response = await firstValueFrom(f.http.get(`${allowedRedirector.url}/start`));
    expect(response.status).toBe(200);
    expect(allowedRedirector.requests[0].authorization).toMatch(/^Bearer /);
    expect(target.requests).toEqual([expect.objectContaining({ url: '/landed', authorization: undefined })]);
  });

  it('a redirect chain allowed → allowed → foreign strips the token only on the foreign hop', async () => {
    const foreign = await server();
    const second = await server((_req, res) => res.writeHead(302, { Location: `${foreign.url}/foreign` }).end());
    const first = await server((_req, res) => res.writeHead(302, { Location: `${second.url}/second` }).end());
    const f = await start({ module: { allowedOrigins: [first.origin, second.origin] } });
    await firstValueFrom(f.http.get(`${first.url}/first`));
    expect(first.requests[0].authorization).toMatch(/^Bearer /);
    expect(foreign.requests).toEqual([expect.objectContaining({ url: '/foreign', authorization: undefined })]);
  });

  it('a bare axios instance with the interceptor follows the same rules', async () => {
    const f = await start();
    const other = await server();
    const instance = axios.create({ baseURL: f.platform.url });
    const detach = f.moduleRef.get(PlatformAuthInterceptor).attach(instance);
    try {
      expect((await instance.get('/api/billing')).status).toBe(200);
      await instance.get(`${other.url}/elsewhere`);
      expect(other.requests[0].authorization).toBeUndefined();
    } finally {
      detach();
    }
  });
});

describe('the token stays out of errors in every failure shape', () => {
  it('while another authenticated request is in flight (shared keep-alive agent)', async () => {
    let release: () => void = () => undefined;
    const slow = await server((req, res) => {
      if (req.url === '/slow') release = () => res.writeHead(200).end();
      else res.writeHead(500).end();
    });
    const f = await start({ module: { allowedOrigins: [slow.origin] } });
    const foreign = await server((_req, res) => res.writeHead(404).end());
    const inFlight = firstValueFrom(f.http.get(`${slow.url}/slow`));
    await eventually(() => expect(slow.requests).toHaveLength(1));
    const sameOrigin = await settle(firstValueFrom(f.http.get(`${slow.url}/fails`)));
    const elsewhere = await settle(firstValueFrom(f.http.get(`${foreign.url}/missing`)));
    const token = await f.tokens.getAccessToken();
    expectNoSecrets(sameOrigin, [token]);
    expectNoSecrets(elsewhere, [token]);
    release();
    await inFlight;
  });

  it('when the connection is refused (the request head never left)', async () => {
    const closed = await refusedOrigin();
    const f = await start({ module: { allowedOrigins: [closed] } });
    const error = await settle(firstValueFrom(f.http.get(`${closed}/x`)));
    expect((error as AxiosError).code).toBe('ECONNREFUSED');
    expectNoSecrets(error, [await f.tokens.getAccessToken()]);
  });

  it('with the fetch adapter', async () => {
    const failing = await server((_req, res) => res.writeHead(500).end());
    const f = await start({ module: { allowedOrigins: [failing.origin] } });
    const error = await settle(firstValueFrom(f.http.get(`${failing.url}/x`, { adapter: 'fetch' })));
    expect((error as AxiosError).response?.status).toBe(500);
    expectNoSecrets(error, [await f.tokens.getAccessToken()]);
  });

  it('when the error body echoes the request headers', async () => {
    const echo = await server((req, res) =>
      res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify({ headers: req.headers })),
    );
    const f = await start({ module: { allowedOrigins: [echo.origin] } });
    const error = (await settle(firstValueFrom(f.http.get(`${echo.url}/x`)))) as AxiosError<{
      headers: Record<string, string>;
    }>;
    expect(error.response?.data.headers.authorization).toBe('Bearer [REDACTED]');
    expectNoSecrets(error, [await f.tokens.getAccessToken()]);
  });

  it('inspecting or serialising the TokenProvider shows no token', async () => {
    const f = await start();
    const token = await f.tokens.getAccessToken();
    expectNoSecrets(f.tokens, [token]);
  });
});

describe("the 401 re-send is invisible to the caller's own interceptors", () => {
  it('a response interceptor added by the app runs once', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    let runs = 0;
    f.http.axiosRef.interceptors.response.use((response) => {
      runs += 1;
      return { ...response, data: { wrapped: response.data as unknown } };
    });
    const response = await firstValueFrom(f.http.get('/api/billing'));
    expect(runs).toBe(1);
    expect(Object.keys(response.data as object)).toEqual(['wrapped']);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('a 401 from a foreign redirect target does not throw away a valid token', async () => {
    const foreign401 = await server((_req, res) => res.writeHead(401).end());
    const redirector = await server((_req, res) => res.writeHead(302, { Location: `${foreign401.url}/denied` }).end());
    const f = await start({ module: { allowedOrigins: [redirector.origin] } });
    const token = await f.tokens.getAccessToken();
    const error = await settle(firstValueFrom(f.http.get(`${redirector.url}/start`)));
    expect((error as AxiosError).response?.status).toBe(401);
    expect(await f.tokens.getAccessToken()).toBe(token);
    expect(redirector.requests).toHaveLength(1);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });
});
