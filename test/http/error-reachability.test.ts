import { type IncomingMessage, type ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import axios, { AxiosError, isCancel, type AxiosInstance } from 'axios';
import { firstValueFrom } from 'rxjs';
import { Agent as UndiciAgent, request as undiciRequest, type Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  PlatformAuthInterceptor,
  PlatformFetch,
  PlatformUnavailableError,
  TokenExchangeError,
} from 'nestjs-platform-auth';
import { createOpaqueAgents } from '../../lib/util/opaque-agents.util.js';
import { eventually } from '../support/eventually.js';
import { findLiveObjects, findSecret } from '../support/live-objects.js';
import { refusedOrigin, useLoopbackServers, type LoopbackServer } from '../support/loopback-server.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';

const start = usePlatformFixtures();
const server = useLoopbackServers();

/** The server never answers a timed-out request, so however busy the machine, the wait ends in the timeout. */
const TIMEOUT_MS = 300;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
type Failure = 'a 500 answer' | 'a connection dropped mid-response' | 'a timeout' | 'a refused connection';

const HANDLERS: Record<Failure, Handler> = {
  'a 500 answer': (_req, res) => {
    res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":"boom"}');
  },
  'a connection dropped mid-response': (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '1000' });
    res.write('part of the body', () => req.socket.destroy());
  },
  'a timeout': () => undefined,
  'a refused connection': () => undefined,
};

/** `/held` is never answered: a request stays on the wire, its head holding the token, while another one fails. */
function withHeld(failure: Handler): Handler {
  return (req, res) => {
    if (req.url !== '/held') failure(req, res);
  };
}

/** One client: `held` starts a request that stays on the wire, `fail` the one whose error is walked. */
interface Client {
  held(url: string): void;
  /** `retry: false` unless `retry` says otherwise: a failure is handed over at once. */
  fail(url: string, options?: { timeoutMs?: number; retry?: boolean }): Promise<unknown>;
  /** What a user reads of the error after `failure`, as the client has always given it. */
  expectReadable(error: unknown, failure: Failure): void;
}

function settle(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );
}

function expectAxiosReadable(error: unknown, failure: Failure): void {
  expect(axios.isAxiosError(error)).toBe(true);
  expect(error).toBeInstanceOf(AxiosError);
  const e = error as AxiosError;
  expect(e.isAxiosError).toBe(true);
  expect(e.config).toMatchObject({ method: 'get', url: expect.stringContaining('/fail') as unknown });
  expect(e.config?.headers.Authorization).toBe('Bearer [REDACTED]');
  expect(e.request).toMatchObject({ method: 'GET', path: expect.stringMatching(/^\/fail/) as unknown });
  const expected: Record<Failure, object> = {
    'a 500 answer': { code: 'ERR_BAD_RESPONSE', status: 500, response: { status: 500, data: { error: 'boom' } } },
    'a connection dropped mid-response': { code: 'ERR_BAD_RESPONSE', message: 'stream has been aborted' },
    'a timeout': { code: 'ECONNABORTED' },
    'a refused connection': { code: 'ECONNREFUSED', cause: { code: 'ECONNREFUSED', name: 'Error' } },
  };
  expect(e).toMatchObject(expected[failure]);
}

function axiosClient(instance: AxiosInstance): Client {
  return {
    held: (url) => void instance.get(url, { retry: false }).catch(() => undefined),
    fail: (url, { timeoutMs, retry = false } = {}) => settle(instance.get(url, { retry, timeout: timeoutMs })),
    expectReadable: expectAxiosReadable,
  };
}

function undiciClient(dispatcher: Dispatcher): Client {
  const call = (url: string, timeout?: number): Promise<unknown> =>
    undiciRequest(url, { dispatcher, headersTimeout: timeout }).then((response) => response.body.text());
  return {
    held: (url) => void call(url).catch(() => undefined),
    fail: (url, { timeoutMs } = {}) => settle(call(url, timeoutMs)),
    expectReadable: (error, failure) => {
      const expected: Partial<Record<Failure, object>> = {
        'a connection dropped mid-response': { code: 'UND_ERR_SOCKET' },
        'a timeout': { code: 'UND_ERR_HEADERS_TIMEOUT' },
        'a refused connection': { code: 'ECONNREFUSED' },
      };
      expect(error).toMatchObject(expected[failure]!);
    },
  };
}

const CLIENTS: Record<string, (f: PlatformFixture) => Client> = {
  PlatformHttpService: (f) => ({
    held: (url) => void f.http.get(url, { retry: false }).subscribe({ error: () => undefined }),
    fail: (url, { timeoutMs, retry = false } = {}) =>
      settle(firstValueFrom(f.http.get(url, { retry, timeout: timeoutMs }))),
    expectReadable: expectAxiosReadable,
  }),
  // A keep-alive agent of the user's own, as the library's is: its sockets outlive the error.
  "the axios interceptor on a user's instance": (f) => {
    const instance = axios.create(createOpaqueAgents());
    f.moduleRef.get(PlatformAuthInterceptor).attach(instance);
    return axiosClient(instance);
  },
  PlatformFetch: (f) => {
    const { fetch } = f.moduleRef.get(PlatformFetch);
    return {
      held: (url) => void fetch(url, { retry: false }).catch(() => undefined),
      fail: (url, { timeoutMs, retry = false } = {}) => {
        const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
        return settle(fetch(url, { retry, signal }).then((response) => response.text()));
      },
      expectReadable: (error, failure) => {
        const expected: Partial<Record<Failure, object>> = {
          'a connection dropped mid-response': { name: 'TypeError', cause: { code: 'UND_ERR_SOCKET' } },
          'a timeout': { name: 'TimeoutError' },
          'a refused connection': { name: 'TypeError', cause: { code: 'ECONNREFUSED' } },
        };
        expect(error).toMatchObject(expected[failure]!);
      },
    };
  },
  'the undici interceptor': (f) => {
    const interceptor = f.moduleRef.get(PlatformFetch)
      .interceptor as unknown as Dispatcher.DispatcherComposeInterceptor;
    return undiciClient(new UndiciAgent().compose(interceptor));
  },
  "PlatformFetch's dispatcher": (f) => undiciClient(f.moduleRef.get(PlatformFetch).dispatcher as unknown as Dispatcher),
};

/** What an error must not hold: a live transport object, or the token, by any property path or rendering. */
function expectDetached(error: unknown, token: string): void {
  expect(error).toBeInstanceOf(Error);
  expect(findLiveObjects(error)).toEqual([]);
  expect(findSecret(error, token)).toEqual([]);
  expect(JSON.stringify(error) ?? '').not.toContain(token);
  expect(inspect(error, { depth: 12, showHidden: true })).not.toContain(token);
}

/** fetch and undici answer a 500 with a response, not an error: only the axios clients throw for it. */
const THROWS_FOR_500 = new Set(['PlatformHttpService', "the axios interceptor on a user's instance"]);

describe.each(Object.keys(CLIENTS))('the error %s hands the caller', (clientName) => {
  const failures = (Object.keys(HANDLERS) as Failure[]).filter(
    (name) => name !== 'a 500 answer' || THROWS_FOR_500.has(clientName),
  );

  it.each(failures)(
    'after %s reaches no agent, socket or request, shows no token, and reads as before',
    async (failure) => {
      const refusing = await refusedOrigin();
      const s = await server(withHeld(HANDLERS[failure]));
      const f = await start({ module: { allowedOrigins: [s.origin, refusing] } });
      const token = await f.tokens.getAccessToken();
      const client = CLIENTS[clientName](f);
      client.held(`${s.url}/held`);
      await eventually(() => expect(s.requests).toHaveLength(1));
      const target = failure === 'a refused connection' ? refusing : s.url;
      const timeoutMs = failure === 'a timeout' ? TIMEOUT_MS : undefined;
      const error = await client.fail(`${target}/fail?page=2`, { timeoutMs });
      expectDetached(error, token);
      client.expectReadable(error, failure);
    },
  );
});

describe('the walk finds what an error holds', () => {
  it("finds the sockets, the request on the wire and its token in axios's own error", async () => {
    const s = await server(withHeld(HANDLERS['a 500 answer']));
    const instance = axios.create(createOpaqueAgents());
    const token = 'a-token-on-the-wire';
    const headers = { Authorization: `Bearer ${token}` };
    void instance.get(`${s.url}/held`, { headers }).catch(() => undefined);
    await eventually(() => expect(s.requests).toHaveLength(1));
    const error = await settle(instance.get(`${s.url}/fail`));
    expect(findLiveObjects(error).map((found) => found.kind)).toEqual(
      expect.arrayContaining(['http.Agent', 'net.Socket', 'http.ClientRequest']),
    );
    expect(findSecret(error, token)).toContainEqual(expect.stringContaining('._header'));
  });
});

describe('errors of the library itself hold nothing live either', () => {
  it.each([
    ['a 500 answer', { kind: 'status', status: 500 }],
    ['a connection dropped', { kind: 'drop' }],
    ['a timeout', { kind: 'hang' }],
  ] as const)('a failed token exchange after %s', async (_name, fault) => {
    const f = await start({
      module: { exchange: { timeoutMs: TIMEOUT_MS, retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } } },
    });
    f.platform.injectFault(fault, 'token');
    const error = await settle(firstValueFrom(f.http.get('/api/billing')));
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(findLiveObjects(error)).toEqual([]);
  });

  it('a failed token exchange after a refused connection', async () => {
    const f = await start({
      module: {
        baseUrl: await refusedOrigin(),
        exchange: { retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } },
      },
    });
    const error = await settle(f.tokens.getAccessToken());
    expect(error).toMatchObject({ networkCode: 'ECONNREFUSED' });
    expect(error).toBeInstanceOf(TokenExchangeError);
    expect(findLiveObjects(error)).toEqual([]);
  });

  it.each(Object.keys(CLIENTS))('the last error once the re-sends are spent, from %s', async (clientName) => {
    const refusing = await refusedOrigin();
    const f = await start({ module: { allowedOrigins: [refusing] } });
    const token = await f.tokens.getAccessToken();
    const error = await CLIENTS[clientName](f).fail(`${refusing}/fail`, { retry: true });
    expectDetached(error, token);
    expect(JSON.stringify(error) + inspect(error)).toContain('ECONNREFUSED');
  });

  it.each(Object.keys(CLIENTS))('PlatformUnavailableError, from %s', async (clientName) => {
    const f = await start();
    const token = await f.tokens.getAccessToken();
    const client = CLIENTS[clientName](f);
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '3153600000' } }, 'api');
    const error = await client.fail(`${f.platform.url}/api/billing?page=2`, { retry: true });
    expect(error).toBeInstanceOf(PlatformUnavailableError);
    expect(error).toMatchObject({ status: 503, method: 'GET', url: `${f.platform.url}/api/billing` });
    expectDetached(error, token);
  });
});

describe('the error PlatformHttpService hands the caller, in the other ways a call fails', () => {
  async function fixture(
    handler: Handler,
  ): Promise<{ f: PlatformFixture; s: LoopbackServer; url: string; token: string }> {
    const s = await server(withHeld(handler));
    const f = await start({ module: { allowedOrigins: [s.origin] } });
    const token = await f.tokens.getAccessToken();
    void f.http.get(`${s.url}/held`, { retry: false }).subscribe({ error: () => undefined });
    await eventually(() => expect(s.requests).toHaveLength(1));
    return { f, s, url: s.url, token };
  }

  it('a 500 read as a stream: the body still reads, from a stream of its own', async () => {
    const { f, url, token } = await fixture(HANDLERS['a 500 answer']);
    const error = (await settle(
      firstValueFrom(f.http.get(`${url}/fail`, { retry: false, responseType: 'stream' })),
    )) as AxiosError<NodeJS.ReadableStream>;
    expectDetached(error, token);
    expect(error.response?.status).toBe(500);
    let body = '';
    for await (const chunk of error.response!.data) body += String(chunk);
    expect(JSON.parse(body)).toEqual({ error: 'boom' });
  });

  it('a 500 read as a stream: destroying its body unread closes the connection', async () => {
    let closed = false;
    const { f, url, token } = await fixture((_req, res) => {
      res.on('close', () => (closed = true));
      res.writeHead(500, { 'Content-Type': 'text/plain', 'Content-Length': '1000' }).write('the first part');
    });
    const error = (await settle(
      firstValueFrom(f.http.get(`${url}/fail`, { retry: false, responseType: 'stream' })),
    )) as AxiosError<NodeJS.ReadableStream & { destroy(): void }>;
    expectDetached(error, token);
    error.response!.data.destroy();
    await eventually(() => expect(closed).toBe(true));
  });

  it('a 500 read as a stream: a connection dropped mid-body fails the read', async () => {
    const { f, url } = await fixture((req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/plain', 'Content-Length': '1000' });
      res.write('the first part', () => req.socket.destroy());
    });
    const error = (await settle(
      firstValueFrom(f.http.get(`${url}/fail`, { retry: false, responseType: 'stream' })),
    )) as AxiosError<NodeJS.ReadableStream>;
    const read = async (): Promise<string> => {
      let body = '';
      for await (const chunk of error.response!.data) body += String(chunk);
      return body;
    };
    await expect(read()).rejects.toThrow();
  });

  it('a 500 resolved by validateStatus: the response, logged like a failure, reaches nothing live either', async () => {
    const { f, url, token } = await fixture(HANDLERS['a 500 answer']);
    const response = await firstValueFrom(f.http.get(`${url}/fail`, { retry: false, validateStatus: () => true }));
    expect(response).toMatchObject({ status: 500, data: { error: 'boom' } });
    expect(findLiveObjects(response)).toEqual([]);
    expect(findSecret(response, token)).toEqual([]);
  });

  it.each(['a 500 answer', 'a connection dropped mid-response', 'a timeout'] as const)(
    "after %s, through axios's fetch adapter",
    async (failure) => {
      const { f, url, token } = await fixture(HANDLERS[failure]);
      const timeout = failure === 'a timeout' ? TIMEOUT_MS : undefined;
      const error = await settle(
        firstValueFrom(f.http.get(`${url}/fail`, { retry: false, adapter: 'fetch', timeout })),
      );
      expectDetached(error, token);
      expect(axios.isAxiosError(error)).toBe(true);
    },
  );

  it("cancelled by the caller's signal while on the wire", async () => {
    const { f, s, url, token } = await fixture(() => undefined);
    const controller = new AbortController();
    const pending = settle(firstValueFrom(f.http.get(`${url}/fail`, { signal: controller.signal })));
    await eventually(() => expect(s.requests).toHaveLength(2));
    controller.abort();
    const error = await pending;
    expect(isCancel(error)).toBe(true);
    expectDetached(error, token);
  });

  it('after too many redirects', async () => {
    const { f, url, token } = await fixture((req, res) =>
      res.writeHead(302, { Location: `/n${req.url!.length}` }).end(),
    );
    const error = await settle(firstValueFrom(f.http.get(`${url}/fail`, { maxRedirects: 2 })));
    expect(error).toMatchObject({ code: 'ERR_FR_TOO_MANY_REDIRECTS' });
    expectDetached(error, token);
  });
});
