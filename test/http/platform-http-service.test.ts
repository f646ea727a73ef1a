import { Agent, ClientRequest } from 'node:http';
import { Socket } from 'node:net';
import { inspect } from 'node:util';
import { HttpService } from '@nestjs/axios';
import { AxiosError, isCancel, type InternalAxiosRequestConfig } from 'axios';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { PlatformHttpService } from 'nestjs-platform-auth';
import { eventually } from '../support/eventually.js';
import { useLoopbackServers } from '../support/loopback-server.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();
const server = useLoopbackServers();

function settle<T>(promise: Promise<T>): Promise<unknown> {
  return promise.catch((error: unknown) => error);
}

/**
 * Every object reachable from `root` through own properties, symbols and non-enumerable ones included; not into the
 * client's keep-alive agent, which every config names and which renders as a placeholder.
 */
function reachable(root: unknown): unknown[] {
  const seen = new Set<unknown>();
  const walk = (value: unknown, depth: number): void => {
    if (!value || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value) || depth > 12) return;
    seen.add(value);
    if (value instanceof Agent) return;
    for (const key of Reflect.ownKeys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (descriptor && 'value' in descriptor) walk(descriptor.value, depth + 1);
    }
  };
  walk(root, 0);
  return [...seen];
}

describe('PlatformHttpService keeps the HttpService contract', () => {
  it('is the HttpService the module provides', async () => {
    const f = await start();
    expect(f.http).toBeInstanceOf(PlatformHttpService);
    expect(f.http).toBeInstanceOf(HttpService);
  });

  it('is cold: nothing is sent before a subscription, and each subscription sends once', async () => {
    const f = await start();
    const calls = f.http.post('/api/messages', { to: 'someone', text: 'cold' });
    await f.tokens.getAccessToken();
    expect(f.platform.counters.apiCalls.total).toBe(0);
    await firstValueFrom(calls);
    await firstValueFrom(calls);
    expect(f.platform.counters.apiCalls.ok).toBe(2);
  });

  it.each(['http', 'fetch'] as const)(
    'unsubscribing before the response aborts the request (%s adapter)',
    async (adapter) => {
      let closed = false;
      const held = await server((req, res) => {
        res.on('close', () => {
          closed = true;
        });
        void req;
      });
      const f = await start({ module: { allowedOrigins: [held.origin] } });
      const errors: unknown[] = [];
      const subscription = f.http
        .get(`${held.url}/held`, { adapter })
        .subscribe({ error: (error: unknown) => errors.push(error) });
      await eventually(() => expect(held.requests).toHaveLength(1));
      subscription.unsubscribe();
      await eventually(() => expect(closed).toBe(true));
      expect(errors).toEqual([]);
    },
  );

  it("the caller's own signal still aborts the request", async () => {
    const held = await server(() => undefined);
    const f = await start({ module: { allowedOrigins: [held.origin] } });
    const controller = new AbortController();
    const pending = settle(firstValueFrom(f.http.get(`${held.url}/held`, { signal: controller.signal })));
    await eventually(() => expect(held.requests).toHaveLength(1));
    controller.abort();
    expect(isCancel(await pending)).toBe(true);
  });

  it('a config sent again from an error is cancelled by unsubscribing, like a new one', async () => {
    let closed = false;
    let refused = true;
    const s = await server((req, res) => {
      if (refused) {
        refused = false;
        res.writeHead(500).end();
        return;
      }
      res.on('close', () => {
        closed = true;
      });
      void req;
    });
    const f = await start({ module: { allowedOrigins: [s.origin] } });
    const error = (await settle(firstValueFrom(f.http.get(`${s.url}/x`)))) as AxiosError;
    expect(error.response?.status).toBe(500);
    const subscription = f.http.request(error.config!).subscribe({ error: () => undefined });
    await eventually(() => expect(s.requests).toHaveLength(2));
    subscription.unsubscribe();
    await eventually(() => expect(closed).toBe(true));
  });

  it('unsubscribing before the response aborts the signal a custom adapter is given', async () => {
    const f = await start();
    let given: AbortSignal | undefined;
    const adapter = (config: InternalAxiosRequestConfig) => {
      given = config.signal as AbortSignal;
      return new Promise<never>(() => undefined);
    };
    const subscription = f.http.get('/api/billing', { adapter }).subscribe();
    await eventually(() => expect(given).toBeInstanceOf(AbortSignal));
    expect(given!.aborted).toBe(false);
    subscription.unsubscribe();
    expect(given!.aborted).toBe(true);
  });

  it("a caller's signal that is not node's own reaches a custom adapter as it is", async () => {
    const f = await start();
    const own = { mine: true, aborted: false, addEventListener: () => undefined, removeEventListener: () => undefined };
    let given: unknown;
    const adapter = (config: InternalAxiosRequestConfig) => {
      given = config.signal;
      return Promise.resolve({ data: {}, status: 200, statusText: 'OK', headers: {}, config });
    };
    await firstValueFrom(f.http.get('/api/billing', { adapter, signal: own as unknown as AbortSignal }));
    // axios copies a plain object on its way; what matters is that it is the caller's, not one made here.
    expect(given).toMatchObject({ mine: true });
    expect(given).not.toBeInstanceOf(AbortSignal);
  });

  it('unsubscribing while a call waits to be re-sent ends the wait, and nothing more is sent', async () => {
    const f = await start({ autoAdvance: false });
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '5' } }, 'api');
    const errors: unknown[] = [];
    const subscription = f.http.get('/api/billing').subscribe({ error: (error: unknown) => errors.push(error) });
    // Parked on the clock, which this fixture moves only when told: the unsubscribe comes during the wait.
    await eventually(() => expect(f.clock.sleeps).toContain(5_000));
    expect(f.clock.pendingSleeps).toBe(1);
    subscription.unsubscribe();
    await eventually(() => expect(f.clock.pendingSleeps).toBe(0));
    f.clock.advance(10_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.platform.counters.apiCalls.total).toBe(1);
    expect(errors).toEqual([]);
  });

  it("the caller's own signal ends a wait before a re-send as a cancelled request", async () => {
    const f = await start({ autoAdvance: false });
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '5' } }, 'api');
    const controller = new AbortController();
    const pending = settle(firstValueFrom(f.http.get('/api/billing', { signal: controller.signal })));
    await eventually(() => expect(f.clock.sleeps).toContain(5_000));
    controller.abort();
    expect(isCancel(await pending)).toBe(true);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it('the form methods and the axios instance send with the token too', async () => {
    const types: unknown[] = [];
    const forms = await server((req, res) => {
      types.push(req.headers['content-type']);
      res.writeHead(200).end();
    });
    const f = await start({ module: { allowedOrigins: [forms.origin] } });
    await firstValueFrom(f.http.postForm(`${forms.url}/form`, { to: 'someone', text: 'form' }));
    await f.http.axiosRef.get(`${forms.url}/plain`);
    expect(forms.requests.map((r) => r.authorization)).toEqual([
      expect.stringMatching(/^Bearer /),
      expect.stringMatching(/^Bearer /),
    ]);
    expect(types[0]).toMatch(/^multipart\/form-data; boundary=/);
  });
});

describe('responses and errors leave without live request state', () => {
  it('an error, a refused status and a success hold no ClientRequest or socket', async () => {
    const s = await server((req, res) => res.writeHead(req.url === '/ok' ? 200 : 500).end());
    const f = await start({ module: { allowedOrigins: [s.origin] } });
    const error = await settle(firstValueFrom(f.http.get(`${s.url}/fails`)));
    const tolerated = await firstValueFrom(f.http.get(`${s.url}/fails`, { validateStatus: () => true }));
    const ok = await firstValueFrom(f.http.get(`${s.url}/ok`));
    expect(error).toBeInstanceOf(AxiosError);
    expect(error).toMatchObject({ isAxiosError: true, status: 500, code: 'ERR_BAD_RESPONSE' });
    expect((error as AxiosError).request).toMatchObject({ method: 'GET', path: '/fails' });
    for (const value of [error, tolerated, ok]) {
      const live = reachable(value).filter((v) => v instanceof ClientRequest || v instanceof Socket);
      expect(live).toEqual([]);
    }
    expect(ok.config.headers.Authorization).toBe('Bearer [REDACTED]');
    expect(inspect(ok, { depth: 12, showHidden: true })).not.toContain(await f.tokens.getAccessToken());
  });
});

describe('redirects are followed by the library', () => {
  it('a 303 after a POST becomes a GET without the body; the token goes to the allowed target', async () => {
    const target = await server();
    const redirector = await server((_req, res) => res.writeHead(303, { Location: `${target.url}/seen` }).end());
    const f = await start({ module: { allowedOrigins: [redirector.origin, target.origin] } });
    const response = await firstValueFrom(f.http.post(`${redirector.url}/form`, { a: 1 }));
    expect(response.status).toBe(200);
    expect(target.requests).toEqual([expect.objectContaining({ method: 'GET', url: '/seen' })]);
    expect(target.requests[0].authorization).toMatch(/^Bearer /);
  });

  it('once a hop left the allowed origins, a later allowed hop gets no token either', async () => {
    const allowed = await server();
    const foreign = await server((_req, res) => res.writeHead(302, { Location: `${allowed.url}/back` }).end());
    const first = await server((_req, res) => res.writeHead(302, { Location: `${foreign.url}/away` }).end());
    const f = await start({ module: { allowedOrigins: [first.origin, allowed.origin] } });
    await firstValueFrom(f.http.get(`${first.url}/start`));
    expect(first.requests[0].authorization).toMatch(/^Bearer /);
    expect(foreign.requests[0].authorization).toBeUndefined();
    expect(allowed.requests).toEqual([expect.objectContaining({ url: '/back', authorization: undefined })]);
  });

  it('maxRedirects is honoured: 0 returns the redirect, a loop ends in ERR_FR_TOO_MANY_REDIRECTS', async () => {
    const loop = await server((req, res) => res.writeHead(302, { Location: `/n${req.url?.length ?? 0}` }).end());
    const f = await start({ module: { allowedOrigins: [loop.origin] } });
    const unfollowed = await firstValueFrom(
      f.http.get(`${loop.url}/x`, { maxRedirects: 0, validateStatus: (status) => status === 302 }),
    );
    expect(unfollowed.status).toBe(302);
    expect(loop.requests).toHaveLength(1);
    const error = await settle(firstValueFrom(f.http.get(`${loop.url}/x`, { maxRedirects: 3 })));
    expect(error).toMatchObject({ code: 'ERR_FR_TOO_MANY_REDIRECTS' });
    expect(loop.requests).toHaveLength(1 + 4);
  });

  it("the caller's beforeRedirect sees each hop without the token and may change its headers", async () => {
    const hops: unknown[] = [];
    const target = await server((req, res) => {
      hops.push(req.headers['x-hop']);
      res.writeHead(200).end();
    });
    const redirector = await server((_req, res) => res.writeHead(307, { Location: `${target.url}/next` }).end());
    const f = await start({ module: { allowedOrigins: [redirector.origin] } });
    const token = await f.tokens.getAccessToken();
    const seen: string[] = [];
    await firstValueFrom(
      f.http.get(`${redirector.url}/start`, {
        beforeRedirect: (options) => {
          seen.push(inspect(options, { depth: 5 }));
          (options.headers as Record<string, string>)['X-Hop'] = String(options.href);
        },
      }),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toContain(token);
    expect(hops).toEqual([`${target.url}/next`]);
    expect(target.requests).toEqual([expect.objectContaining({ url: '/next', authorization: undefined })]);
  });
});
