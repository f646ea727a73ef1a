import type { IncomingHttpHeaders } from 'node:http';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import ky from 'ky';
import createClient from 'openapi-fetch';
import { describe, expect, it } from 'vitest';
import { InjectPlatformFetch, PlatformAuthModule, PlatformFetch } from 'nestjs-platform-auth';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { useLoopbackServers } from '../support/loopback-server.js';

const start = usePlatformFixtures();
const server = useLoopbackServers();

describe('PlatformFetch', () => {
  it('leaves an Authorization the caller set alone, and exchanges nothing for it', async () => {
    const f = await start();
    const response = await f.moduleRef.get(PlatformFetch).fetch('/api/billing', {
      headers: { Authorization: 'Bearer mine' },
    });
    expect(response.status).toBe(401);
    expect(f.platform.counters.exchanges.total).toBe(0);
  });

  it('takes a Request, and re-sends one without a body after a 401', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const response = await f.moduleRef.get(PlatformFetch).fetch(new Request(`${f.platform.url}/api/billing`));
    expect(response.status).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: 1, ok: 1 });
  });

  it('a call without an init carries the token of the moment: the one renewed after a 401, then on later calls', async () => {
    const f = await start();
    const { fetch } = f.moduleRef.get(PlatformFetch);
    expect((await fetch('/api/billing')).status).toBe(200);
    f.platform.revokeAllTokens();
    expect((await fetch('/api/billing')).status).toBe(200);
    expect((await fetch(`${f.platform.url}/api/billing`)).status).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: 1, ok: 3 });
    expect(f.platform.counters.exchanges.accepted).toBe(2);
  });

  it('a GET with no init gets an idempotency key when the integration lists GET, a new one per call', async () => {
    const keys: unknown[] = [];
    const origin = await server((req, res) => {
      keys.push(req.headers['idempotency-key']);
      res.end('{"ok":true}');
    });
    const f = await start({ module: { allowedOrigins: [origin.url], idempotencyKey: { methods: ['GET'] } } });
    await f.tokens.getAccessToken();
    const { fetch } = f.moduleRef.get(PlatformFetch);
    expect((await fetch(`${origin.url}/a`)).status).toBe(200);
    expect((await fetch(`${origin.url}/b`)).status).toBe(200);
    expect(keys).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/), expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    expect(keys[0]).not.toBe(keys[1]);
    expect(origin.requests.every((request) => request.authorization !== undefined)).toBe(true);
  });

  it('re-sends a POST whose body was given in init', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const response = await f.moduleRef.get(PlatformFetch).fetch('/api/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'someone', text: 'hello' }),
    });
    expect(response.status).toBeLessThan(300);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: 1, total: 2 });
  });

  it('keeps the token on a redirect within the platform origin, and honours redirect: manual', async () => {
    const f = await start();
    const { fetch } = f.moduleRef.get(PlatformFetch);
    const redirect = { kind: 'status', status: 307, headers: { location: '/api/billing' } } as const;
    f.platform.injectFault(redirect, 'api');
    expect((await fetch('/api/elsewhere')).status).toBe(200);
    // Again with the token cached: a call with no init is sent its quicker way, and follows the redirect the same.
    f.platform.injectFault(redirect, 'api');
    expect((await fetch('/api/elsewhere')).status).toBe(200);
    f.platform.injectFault(redirect, 'api');
    const manual = await fetch('/api/elsewhere', { redirect: 'manual' });
    expect(manual.status).toBe(307);
    expect(manual.headers.get('location')).toBe('/api/billing');
    expect(f.platform.counters.apiCalls.ok).toBe(2);
    expect(f.platform.counters.apiCalls.unauthorized).toBe(0);
  });

  it("drops the caller's cookie and proxy credentials on a redirect to another origin, as fetch does", async () => {
    const f = await start();
    const received: IncomingHttpHeaders[] = [];
    const foreign = await server((req, res) => {
      received.push(req.headers);
      res.writeHead(200).end();
    });
    f.platform.injectFault({ kind: 'status', status: 307, headers: { location: `${foreign.url}/landing` } }, 'api');
    const response = await f.moduleRef.get(PlatformFetch).fetch('/api/elsewhere', {
      headers: { cookie: 'session=platform', 'proxy-authorization': 'Basic cHJveHk=', 'x-trace': 'kept' },
    });
    expect(response.status).toBe(200);
    expect(received).toHaveLength(1);
    expect(received[0]['x-trace']).toBe('kept');
    expect(received[0]).not.toHaveProperty('cookie');
    expect(received[0]).not.toHaveProperty('proxy-authorization');
    expect(received[0]).not.toHaveProperty('authorization');
  });

  it('gives openapi-fetch and ky the token and the one re-send after a 401', async () => {
    const f = await start();
    const platform = f.moduleRef.get(PlatformFetch);
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const openapi = createClient<{ '/api/billing': { get: { responses: { 200: { content: object } } } } }>({
      baseUrl: f.platform.url,
      fetch: platform.fetch,
    });
    const client = ky.create({ prefixUrl: f.platform.url, fetch: platform.fetch, retry: 0 });
    const [viaOpenapi, viaKy] = await Promise.all([openapi.GET('/api/billing'), client.get('api/billing')]);
    expect(viaOpenapi.response.status).toBe(200);
    expect(viaKy.status).toBe(200);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: 2, ok: 2 });
  });

  it("the dispatcher passes the caller's abort to the request in flight", async () => {
    let arrived!: () => void;
    let closed!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const socketClosed = new Promise<void>((resolve) => (closed = resolve));
    // Never answers: only the client's abort ends the request.
    const silent = await server((req) => {
      req.socket.once('close', closed);
      arrived();
    });
    const f = await start({ module: { allowedOrigins: [silent.origin] } });
    const { dispatcher } = f.moduleRef.get(PlatformFetch);
    const controller = new AbortController();
    const sending = fetch(`${silent.url}/held`, { dispatcher, signal: controller.signal });
    await arrival;
    controller.abort();
    await expect(sending).rejects.toMatchObject({ name: 'AbortError' });
    await socketClosed;
    expect(silent.requests).toEqual([
      expect.objectContaining({ url: '/held', authorization: expect.stringMatching(/^Bearer /) }),
    ]);
  });

  it('of a named integration is injected by name and calls with its own token', async () => {
    const foreign = await server();
    const billing = await PlatformEmulator.start();
    try {
      const integration = await billing.createIntegration();
      @Injectable()
      class BillingCaller {
        constructor(@InjectPlatformFetch('billing') readonly platform: PlatformFetch) {}
      }
      @Module({
        imports: [PlatformAuthModule.forRoot({ name: 'billing', ...integration.moduleOptions })],
        providers: [BillingCaller],
      })
      class AppModule {}
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      await moduleRef.init();
      try {
        const { platform } = moduleRef.get(BillingCaller);
        expect((await platform.fetch('/api/billing')).status).toBe(200);
        expect((await platform.fetch(`${foreign.url}/x`)).status).toBe(200);
        expect(foreign.requests[0].authorization).toBeUndefined();
        expect(billing.counters.exchanges.accepted).toBe(1);
      } finally {
        await moduleRef.close();
      }
    } finally {
      await billing.close();
    }
  });
});
