import axios, { type AxiosError, type InternalAxiosRequestConfig } from 'axios';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { useLoopbackServers } from '../support/loopback-server.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { eventually } from '../support/eventually.js';
import { renderReachable } from '../support/reachable-rendering.js';

// Attacks on the authenticated HttpService: each describe names the defence it checks (SECURITY.md lists them).

const start = usePlatformFixtures();
const server = useLoopbackServers();

function settle<T>(promise: Promise<T>): Promise<unknown> {
  return promise.catch((error: unknown) => error);
}

const deepInspect = (value: unknown): string => renderReachable(value, 12);

describe('the token is on a config only once it is attached to an allowed-origin request', () => {
  it("an app's own request interceptor, running first, sees no token on any config", async () => {
    const f = await start();
    const foreign = await server();
    const token = await f.tokens.getAccessToken();
    const seen: string[] = [];
    f.http.axiosRef.interceptors.request.use((config) => {
      seen.push(deepInspect(config));
      return config;
    });
    const foreignResponse = await firstValueFrom(f.http.get(`${foreign.url}/elsewhere`));
    const platformResponse = await firstValueFrom(f.http.get('/api/billing'));
    expect(platformResponse.status).toBe(200);
    expect(seen).toHaveLength(2);
    for (const rendering of seen) expect(rendering).not.toContain(token);
    expect(deepInspect(foreignResponse.config)).not.toContain(token);
    expect(Object.getOwnPropertySymbols(foreignResponse.config)).toEqual([]);
  });
});

describe('an error keeps no path to a live keep-alive socket', () => {
  it('a later request on the same socket does not show its token through an earlier error', async () => {
    const sockets: Record<string, number | undefined> = {};
    let release: () => void = () => undefined;
    const s = await server((req, res) => {
      sockets[req.url ?? ''] = req.socket.remotePort;
      if (req.url === '/hold') release = () => res.writeHead(200).end();
      else res.writeHead(500).end();
    });
    const f = await start({ module: { allowedOrigins: [s.origin] } });
    const error = await settle(firstValueFrom(f.http.get(`${s.url}/fail`)));
    expect((error as AxiosError).response?.status).toBe(500);
    const held = firstValueFrom(f.http.get(`${s.url}/hold`));
    await eventually(() => expect(sockets['/hold']).toBeDefined());
    expect(sockets['/hold']).toBe(sockets['/fail']);
    const token = await f.tokens.getAccessToken();
    expect(deepInspect(error)).not.toContain(token);
    expect((error as AxiosError).request).toMatchObject({ method: 'GET', path: '/fail' });
    release();
    await held;
  });
});

describe('with the fetch adapter, a 401 from a foreign redirect target is not blamed on the token', () => {
  it('10 calls: no extra exchange, each foreign POST sent once', async () => {
    const foreign401 = await server((_req, res) => res.writeHead(401).end());
    const redirector = await server((_req, res) => res.writeHead(307, { Location: `${foreign401.url}/denied` }).end());
    const f = await start({ module: { allowedOrigins: [redirector.origin] } });
    const token = await f.tokens.getAccessToken();
    for (let i = 0; i < 10; i += 1) {
      const error = await settle(firstValueFrom(f.http.post(`${redirector.url}/start`, { i }, { adapter: 'fetch' })));
      expect((error as AxiosError).response?.status).toBe(401);
    }
    expect(f.platform.counters.exchanges.accepted).toBe(1);
    expect(await f.tokens.getAccessToken()).toBe(token);
    expect(redirector.requests).toHaveLength(10);
    expect(foreign401.requests).toHaveLength(10);
    for (const received of foreign401.requests) expect(received.authorization).toBeUndefined();
  });

  it('a 401 from the platform itself still renews and re-sends once', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const response = await firstValueFrom(f.http.get('/api/billing', { adapter: 'fetch' }));
    expect(response.status).toBe(200);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });
});

describe('a body that cannot be sent twice is never re-sent', () => {
  it('a WHATWG ReadableStream body: the 401 is returned, no renewal', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"to":"someone","text":"streamed"}'));
        controller.close();
      },
    });
    const error = await settle(
      firstValueFrom(
        f.http.post('/api/messages', body, { adapter: 'fetch', headers: { 'Content-Type': 'application/json' } }),
      ),
    );
    expect((error as AxiosError).response?.status).toBe(401);
    expect(f.platform.counters.apiCalls.total).toBe(1);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });
});

describe('re-sending error.config (the axios-retry pattern) gets a fresh, correct header', () => {
  async function retryOnce500(via: 'same instance' | 'global axios') {
    let count = 0;
    const flaky = await server((_req, res) => {
      count += 1;
      res.writeHead(count === 1 ? 500 : 200).end();
    });
    const f = await start({ module: { allowedOrigins: [flaky.origin] } });
    const token = await f.tokens.getAccessToken();
    const client = f.http.axiosRef;
    client.interceptors.response.use(undefined, (error: AxiosError) => {
      const config = error.config as InternalAxiosRequestConfig & { retried?: boolean };
      if (config.retried) throw error;
      config.retried = true;
      return via === 'same instance' ? client.request(config) : axios.request(config);
    });
    const response = await firstValueFrom(f.http.get(`${flaky.url}/flaky`));
    return { f, flaky, token, response };
  }

  it.each(['same instance', 'global axios'] as const)('re-sent through the %s', async (via) => {
    const { f, flaky, token, response } = await retryOnce500(via);
    expect(response.status).toBe(200);
    expect(flaky.requests.map((r) => r.authorization)).toEqual([`Bearer ${token}`, `Bearer ${token}`]);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
    expect(await f.tokens.getAccessToken()).toBe(token);
  });
});

describe('a URL object as url', () => {
  it('is authorized for an allowed origin and left alone for another', async () => {
    const f = await start();
    const foreign = await server();
    const platformUrl = new URL('/api/billing', f.platform.url) as unknown as string;
    expect((await firstValueFrom(f.http.get(platformUrl))).status).toBe(200);
    await firstValueFrom(f.http.get(new URL('/x', foreign.url) as unknown as string));
    expect(foreign.requests).toEqual([expect.objectContaining({ url: '/x', authorization: undefined })]);
    expect(f.platform.counters.apiCalls.ok).toBe(1);
  });
});

describe('decision: a non-2xx response resolved by validateStatus carries no live token', () => {
  it('response.config and response.request show the token redacted', async () => {
    const failing = await server((_req, res) => res.writeHead(503).end('down'));
    const f = await start({ module: { allowedOrigins: [failing.origin] } });
    const token = await f.tokens.getAccessToken();
    const response = await firstValueFrom(f.http.get(`${failing.url}/x`, { validateStatus: () => true }));
    expect(response.status).toBe(503);
    expect(failing.requests[0].authorization).toBe(`Bearer ${token}`);
    expect(response.config.headers.Authorization).toBe('Bearer [REDACTED]');
    expect(deepInspect(response)).not.toContain(token);
  });
});
