import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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

  it('makes a redirect to the platform relative, so the client follows it through the proxy; keeps every cookie', async () => {
    const proxy = await startProxy();
    const answer = await send(proxy.url, '/redirect');
    expect([answer.status, answer.headers.location, answer.headers['set-cookie']]).toEqual([
      302,
      '/next?page=2',
      ['a=1', 'b=2'],
    ]);
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

  it('bound elsewhere with --host: also that name and IP literals, still no other DNS name', () => {
    expect(isAcceptedHost('192.168.1.20:8787', { host: '0.0.0.0', port: 8787 })).toBe(true);
    expect(isAcceptedHost('devbox.lan:8787', { host: 'devbox.lan', port: 8787 })).toBe(true);
    expect(isAcceptedHost('evil.example:8787', { host: '0.0.0.0', port: 8787 })).toBe(false);
    expect(isAcceptedHost('evil.example:8787', { host: 'devbox.lan', port: 8787 })).toBe(false);
  });
});
