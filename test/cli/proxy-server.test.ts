import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAcceptedHost } from '../../lib/cli/proxy/auth-proxy.rules.js';
import { AuthProxy, type AuthProxyOptions } from '../../lib/cli/proxy/auth-proxy.server.js';

// The proxy's server with its I/O injected: `send` is plain fetch to a recording server standing in for the
// platform, so that what the platform receives and what the client gets can both be read. The command's own tests
// (proxy.test.ts) run it with the module's PlatformFetch against the emulator.

interface Received {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly bodyBytes: number;
}

let upstream: Server;
let origin: string;
const received: Received[] = [];
let releaseStream: () => void = () => undefined;
let upstreamClosed: () => void = () => undefined;
/** Requests to `/held` the platform has read whole and answers only when the test says. */
const held: Array<{ readonly bodyBytes: number; answer(): void }> = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
    req.on('end', () => {
      received.push({ url: req.url!, headers: req.headers, bodyBytes });
      switch (req.url) {
        case '/redirect':
          res.writeHead(302, { location: `${origin}/next?page=2`, 'set-cookie': ['a=1', 'b=2'] }).end();
          return;
        case '/redirect/double-slash':
          res.writeHead(302, { location: `${origin}//evil.example/steal` }).end();
          return;
        case '/redirect/relative/from':
          res.writeHead(302, { location: 'to?x=1#top' }).end();
          return;
        case '/redirect/elsewhere':
          res.writeHead(302, { location: 'https://cdn.example/file' }).end();
          return;
        case '/held':
          held.push({ bodyBytes, answer: () => res.writeHead(200, { 'content-type': 'text/plain' }).end('answered') });
          return;
        case '/gzip':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
          res.end(gzipSync('decoded by the proxy'));
          return;
        case '/big':
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.end(Buffer.alloc(1024 * 1024));
          return;
        case '/stream':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first|');
          releaseStream = () => res.end('second');
          return;
        case '/hang':
          res.on('close', () => upstreamClosed());
          return;
        default:
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(() => {
  upstream.closeAllConnections();
  upstream.close();
});

async function startProxy(options: Partial<AuthProxyOptions> = {}): Promise<AuthProxy> {
  const proxy = await AuthProxy.start({ host: '127.0.0.1', port: 0, platformOrigin: origin, send: fetch, ...options });
  return proxy;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** Whether the whole body arrived (false: the proxy cut the connection). */
  readonly complete: boolean;
}

function send(
  url: string,
  path: string,
  { method = 'GET', headers = {}, body = undefined as Buffer | undefined } = {},
  onFirstChunk?: (text: string) => void,
): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('latin1').on('data', (chunk: string) => {
        if (text === '') onFirstChunk?.(chunk);
        text += chunk;
      });
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode!, headers: res.headers, text, complete: res.complete }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the auth proxy server', () => {
  it('passes on end-to-end headers only: no hop-by-hop header, none the client named in Connection, no Authorization', async () => {
    const proxy = await startProxy();
    const answer = await send(proxy.url, '/echo?q=1', {
      headers: {
        connection: 'keep-alive, x-hop',
        'x-hop': 'only for the proxy',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic c2VjcmV0',
        authorization: 'Bearer the-client-s-own',
        te: 'trailers',
        'accept-encoding': 'zstd',
        'x-custom': ['one', 'two'],
      },
    });
    expect(answer.status).toBe(200);
    const { headers, url } = received.at(-1)!;
    expect(url).toBe('/echo?q=1');
    expect(headers['x-custom']).toBe('one, two');
    expect(headers.host).toBe(new URL(origin).host);
    for (const name of ['x-hop', 'keep-alive', 'proxy-authorization', 'authorization', 'te'])
      expect(headers[name], name).toBeUndefined();
    expect(headers['accept-encoding']).not.toContain('zstd');
    await proxy.close();
  });

  it("makes a redirect to the platform absolute on the proxy's origin, so the client follows it through the proxy; keeps every cookie", async () => {
    const proxy = await startProxy();
    const answer = await send(proxy.url, '/redirect');
    expect([answer.status, answer.headers.location, answer.headers['set-cookie']]).toEqual([
      302,
      `${proxy.url}/next?page=2`,
      ['a=1', 'b=2'],
    ]);
    // On the origin the client reached it at, not the address it is bound to.
    const byName = await send(proxy.url, '/redirect', { headers: { host: `localhost:${new URL(proxy.url).port}` } });
    expect(byName.headers.location).toBe(`http://localhost:${new URL(proxy.url).port}/next?page=2`);
    // Resolved against the path that was forwarded, as the client would have resolved it.
    const relative = await send(proxy.url, '/redirect/relative/from');
    expect(relative.headers.location).toBe(`${proxy.url}/redirect/relative/to?x=1#top`);
    // Elsewhere stays elsewhere: the client leaves the proxy and the platform, and no token goes along.
    expect((await send(proxy.url, '/redirect/elsewhere')).headers.location).toBe('https://cdn.example/file');
    const gzip = await send(proxy.url, '/gzip');
    expect([gzip.text, gzip.headers['content-encoding']]).toEqual(['decoded by the proxy', undefined]);
    await proxy.close();
  });

  it('streams an answer as it arrives', async () => {
    const proxy = await startProxy();
    const answer = await send(proxy.url, '/stream', {}, (first) => {
      // The platform holds the rest back until the client has the first part: it went through unbuffered.
      expect(first).toBe('first|');
      releaseStream();
    });
    expect([answer.text, answer.complete]).toEqual(['first|second', true]);
    await proxy.close();
  });

  it('refuses a request body over its bound with 413, and cuts an answer that grows past its bound', async () => {
    const proxy = await startProxy({ maxRequestBytes: 1024, maxResponseBytes: 64 * 1024 });
    const before = received.length;
    const chunked = await send(proxy.url, '/echo', { method: 'POST', body: Buffer.alloc(4096) });
    expect([chunked.status, chunked.text]).toEqual([413, expect.stringContaining('"error":"request_too_large"')]);
    const declared = await send(proxy.url, '/echo', {
      method: 'PUT',
      headers: { 'content-length': '5000000' },
      body: Buffer.alloc(16),
    }).catch((error: NodeJS.ErrnoException) => ({ status: error.code }));
    expect([413, 'ECONNRESET', 'EPIPE']).toContain(declared.status);
    expect(received.length).toBe(before);

    expect((await send(proxy.url, '/echo', { method: 'POST', body: Buffer.alloc(1024) })).status).toBe(200);
    expect(received.at(-1)!.bodyBytes).toBe(1024);
    const big = await send(proxy.url, '/big');
    expect([big.status, big.complete]).toEqual([200, false]);
    expect(big.text.length).toBeLessThan(1024 * 1024);
    await proxy.close();
  });

  it('answers a platform that does not answer with a typed 502', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const proxy = await startProxy({ platformOrigin: gone });
    const answer = await send(proxy.url, '/api/billing');
    expect([answer.status, JSON.parse(answer.text)]).toEqual([
      502,
      { error: 'platform_unreachable', message: 'the platform did not answer (ECONNREFUSED)' },
    ]);
    await proxy.close();
  });

  it('closing cancels the requests still on their way to the platform', async () => {
    const proxy = await startProxy();
    const upstreamGone = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const pending = send(proxy.url, '/hang').catch((error: NodeJS.ErrnoException) => error.code);
    await expect.poll(() => received.at(-1)?.url).toBe('/hang');
    await proxy.close();
    await upstreamGone;
    expect(await pending).toBe('ECONNRESET');
  });
});

describe('where a redirect and a path may lead', () => {
  it("keeps a platform redirect to '<platform>//host/…' on the proxy, where following it is refused", async () => {
    const proxy = await startProxy();
    const redirect = await send(proxy.url, '/redirect/double-slash');
    // Before, the client got `//evil.example/steal` and went there with its own headers.
    expect(redirect.headers.location).toBe(`${proxy.url}//evil.example/steal`);
    const followed = await fetch(`${proxy.url}/redirect/double-slash`);
    expect(followed.status).toBe(400);
    expect(await followed.json()).toMatchObject({ error: 'invalid_target' });
    await proxy.close();
  });

  it('refuses a path whose dot segments resolve to one that names another host', async () => {
    const proxy = await startProxy();
    const before = received.length;
    for (const target of [
      '/..//evil.example/x',
      '/api/../..//evil.example',
      '/%2e%2e//evil.example',
      '/./\\evil.example',
    ]) {
      const answer = await send(proxy.url, target);
      expect([answer.status, answer.text], target).toEqual([400, expect.stringContaining('"error":"invalid_target"')]);
    }
    expect(received.length).toBe(before);
    expect((await send(proxy.url, '/api/../echo')).status).toBe(200);
    expect(received.at(-1)!.url).toBe('/echo');
    await proxy.close();
  });
});

describe('the Host a request may name', () => {
  it('bound to loopback: loopback names on its port only, never another name (DNS rebinding)', () => {
    const binding = { host: '127.0.0.1', port: 8787 };
    for (const host of ['127.0.0.1:8787', 'localhost:8787', 'LOCALHOST:8787', '[::1]:8787'])
      expect(isAcceptedHost(host, binding), host).toBe(true);
    for (const host of [
      undefined,
      '',
      '127.0.0.1',
      '127.0.0.1:8788',
      'evil.example:8787',
      'localhost.evil.example:8787',
      '127.0.0.1.nip.io:8787',
      '192.168.1.20:8787',
      'user@127.0.0.1:8787',
      '127.0.0.1:8787/path',
    ])
      expect(isAcceptedHost(host, binding), String(host)).toBe(false);
  });

  it("bound elsewhere with --host: also that name or address, and on all addresses this machine's own; never another", () => {
    const all = { host: '0.0.0.0', port: 8787, localAddresses: () => ['127.0.0.1', '192.168.1.20', 'fe80::1'] };
    expect(isAcceptedHost('192.168.1.20:8787', all)).toBe(true);
    expect(isAcceptedHost('[FE80:0::1]:8787', all)).toBe(true);
    expect(isAcceptedHost('localhost:8787', all)).toBe(true);
    expect(isAcceptedHost('devbox.lan:8787', { host: 'devbox.lan', port: 8787 })).toBe(true);
    expect(isAcceptedHost('192.168.1.20:8787', { host: '192.168.1.20', port: 8787 })).toBe(true);
    for (const [host, binding] of [
      ['evil.example:8787', all],
      ['192.168.1.99:8787', all],
      ['8.8.8.8:8787', all],
      ['evil.example:8787', { host: 'devbox.lan', port: 8787 }],
      ['192.168.1.20:8787', { host: 'devbox.lan', port: 8787 }],
      ['192.168.1.21:8787', { host: '192.168.1.20', port: 8787 }],
    ] as const)
      expect(isAcceptedHost(host, binding), `${host} bound to ${binding.host}`).toBe(false);
  });
});

describe('a page in a browser', () => {
  it("is refused on loopback by what browsers send (Sec-Fetch-Dest, -Site, -User, Origin); Node's fetch is not", async () => {
    const proxy = await startProxy();
    const before = received.length;
    for (const headers of [
      { 'sec-fetch-dest': 'image' },
      { 'sec-fetch-dest': 'iframe', 'sec-fetch-mode': 'navigate' },
      { 'sec-fetch-user': '?1' },
      { 'sec-fetch-site': 'same-origin' },
      { origin: 'null' },
    ]) {
      const answer = await send(proxy.url, '/echo', { headers });
      expect([answer.status, answer.text], JSON.stringify(headers)).toEqual([
        403,
        expect.stringContaining('"error":"browser_refused"'),
      ]);
    }
    expect(received.length).toBe(before);
    // Node's own fetch sends Sec-Fetch-Mode: cors, and nothing else a browser would.
    expect((await fetch(`${proxy.url}/echo`)).status).toBe(200);
    expect(received.at(-1)!.headers['sec-fetch-mode']).toBe('cors');
    await proxy.close();
  });

  it('gets no preflight: OPTIONS is refused, with no CORS header, so a page can never send the key header', async () => {
    const proxy = await startProxy({ key: 'a-key-of-this-test-run' });
    const before = received.length;
    const preflight = await send(proxy.url, '/echo', {
      method: 'OPTIONS',
      headers: {
        origin: 'http://intranet.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-platform-proxy-key',
      },
    });
    const plain = await send(proxy.url, '/echo', { method: 'OPTIONS' });
    expect([preflight.status, plain.status]).toEqual([403, 405]);
    for (const answer of [preflight, plain])
      expect(Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expect(received.length).toBe(before);
    await proxy.close();
  });
});

describe('the proxy key', () => {
  const key = 'c2VjcmV0LWtleS1vZi10aGlzLXRlc3QtcnVu';

  it('forwards only requests that carry it, compared whole, and never passes it on', async () => {
    const proxy = await startProxy({ key });
    const before = received.length;
    for (const headers of [
      {},
      { 'x-platform-proxy-key': '' },
      { 'x-platform-proxy-key': key.slice(0, -1) },
      { 'x-platform-proxy-key': `${key}x` },
      { 'x-platform-proxy-key': [key, key] },
    ]) {
      const answer = await send(proxy.url, '/echo', { headers });
      expect([answer.status, answer.text], JSON.stringify(headers)).toEqual([
        403,
        expect.stringContaining('"error":"proxy_key_required"'),
      ]);
      expect(answer.text).not.toContain(key);
    }
    expect(received.length).toBe(before);
    const ok = await send(proxy.url, '/echo', { headers: { 'X-Platform-Proxy-Key': key } });
    expect(ok.status).toBe(200);
    expect(received.at(-1)!.headers).not.toHaveProperty('x-platform-proxy-key');
    expect(JSON.stringify(received.at(-1)!.headers)).not.toContain(key);
    await proxy.close();
  });
});

describe('what the proxy holds at once', () => {
  /** Waits until the platform holds `count` requests. */
  const platformHolds = (count: number) => expect.poll(() => held.length, { timeout: 60_000 }).toBe(count);
  const answerHeld = () => held.splice(0).forEach((request) => request.answer());

  it('answers 503 with Retry-After past its requests in flight, and forwards again once one is answered', async () => {
    const proxy = await startProxy({ maxInFlight: 2 });
    const first = send(proxy.url, '/held');
    const second = send(proxy.url, '/held', { method: 'POST', body: Buffer.alloc(10) });
    await platformHolds(2);
    const refused = await send(proxy.url, '/echo');
    expect([refused.status, refused.headers['retry-after'], refused.text]).toEqual([
      503,
      '1',
      expect.stringContaining('"error":"proxy_busy"'),
    ]);
    answerHeld();
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
    expect((await send(proxy.url, '/echo')).status).toBe(200);
    await proxy.close();
  });

  it('answers 503 with Retry-After past the request bodies it may hold, declared or chunked, and takes bodies again once they are sent', async () => {
    const proxy = await startProxy({ maxRequestBytes: 1000, maxBufferedBytes: 1500 });
    const first = send(proxy.url, '/held', { method: 'POST', body: Buffer.alloc(1000) });
    await platformHolds(1);
    const declared = await send(proxy.url, '/echo', { method: 'PUT', body: Buffer.alloc(600) });
    const chunked = await send(proxy.url, '/echo', {
      method: 'POST',
      headers: { 'transfer-encoding': 'chunked' },
      body: Buffer.alloc(600),
    }).catch((error: NodeJS.ErrnoException) => ({ status: error.code, headers: {}, text: '' }));
    expect([declared.status, declared.headers['retry-after']]).toEqual([503, '1']);
    expect(declared.text).toContain('the proxy holds 1500 bytes of request bodies');
    expect([503, 'ECONNRESET', 'EPIPE']).toContain(chunked.status);
    // Within what is left, a body still goes through while the first is held.
    const small = await send(proxy.url, '/echo', { method: 'POST', body: Buffer.alloc(500) });
    expect(small.status).toBe(200);
    answerHeld();
    expect((await first).status).toBe(200);
    expect(received.filter((request) => request.bodyBytes === 600)).toEqual([]);
    // The first body was released once the platform answered it: a body as large goes through again.
    const again = await send(proxy.url, '/echo', { method: 'POST', body: Buffer.alloc(1000) });
    expect(again.status).toBe(200);
    await proxy.close();
  });

  it('keeps no more connections open than its bound: the one beyond is closed unanswered', async () => {
    const proxy = await startProxy({ maxConnections: 1 });
    const first = send(proxy.url, '/held');
    await platformHolds(1);
    const { port } = new URL(proxy.url);
    const beyond = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(`GET /echo HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`),
      );
      let text = '';
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
      socket.on('error', () => undefined).on('close', () => resolve(text));
    });
    expect(beyond).toBe('');
    answerHeld();
    expect((await first).status).toBe(200);
    await proxy.close();
  });
});
