import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PlatformAuthError, TokenExchangeError } from '../../platform-auth.errors.js';
import type { PlatformFetchInit } from '../../http/clients/platform-fetch.js';
import {
  REFUSED_METHODS,
  forwardedRequestHeaders,
  isAcceptedHost,
  isFromBrowser,
  returnedResponseHeaders,
  targetProblem,
} from './auth-proxy.rules.js';

/** A request body is held whole, so that a 401 can be answered by one re-send: the module never re-sends a stream. */
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** A response is streamed, and cut when it grows past this: a local tool should not relay without end. */
const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export interface AuthProxyOptions {
  readonly host: string;
  readonly port: number;
  /** The platform's origin (`https://platform.example`): every request goes there, and nowhere else. */
  readonly platformOrigin: string;
  /** Sends one request with the integration's token: the module's `PlatformFetch.fetch`. */
  readonly send: (url: string, init: PlatformFetchInit) => Promise<Response>;
  readonly maxRequestBytes?: number;
  readonly maxResponseBytes?: number;
  /** A line for the person running the proxy: a request that failed on the way to the platform, and why. */
  readonly report?: (line: string) => void;
}

interface ProxyAnswer {
  readonly status: number;
  readonly error: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

/**
 * `platform-auth proxy`: forwards `http://127.0.0.1:8787/<path>` to the platform's origin with the integration's
 * bearer token, through the module's own `PlatformFetch` (token cached and renewed, one re-send after a 401). It
 * refuses what could send the token elsewhere or let a web page use it: another origin in the request target, a
 * `Host` that does not name the proxy (DNS rebinding), a browser's cross-site request, TRACE and CONNECT.
 */
export class AuthProxy {
  readonly url: string;
  private readonly inFlight = new Set<AbortController>();
  private closed?: Promise<void>;

  private constructor(
    private readonly server: Server,
    private readonly options: AuthProxyOptions,
    private readonly port: number,
  ) {
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    this.url = `http://${host}:${port}`;
    // A client that hangs up in the middle of its body ends its own request, nothing else.
    server.on('request', (req, res) => void this.handle(req, res).catch(() => res.destroy()));
  }

  /** Listens on `host:port` and resolves once connections are accepted; rejects with the listen error. */
  static async start(options: AuthProxyOptions): Promise<AuthProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: options.host, port: options.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new AuthProxy(server, options, (server.address() as AddressInfo).port);
  }

  /** Stops listening, cancels the requests still on their way and closes every connection. Safe to call twice. */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      for (const controller of this.inFlight) controller.abort();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refusal = this.refusal(req);
    if (refusal) return answer(res, refusal);
    const controller = new AbortController();
    this.inFlight.add(controller);
    // The client went away before its answer was complete: the platform call has nobody to answer.
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
      this.inFlight.delete(controller);
    });
    const method = req.method!;
    let body: Buffer | undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      body = await readBounded(req, this.options.maxRequestBytes ?? MAX_REQUEST_BYTES);
      if (body === undefined) {
        res.shouldKeepAlive = false;
        return answer(res, {
          status: 413,
          error: 'request_too_large',
          message: `the proxy forwards request bodies of at most ${this.options.maxRequestBytes ?? MAX_REQUEST_BYTES} bytes`,
        });
      }
    }
    let response: Response;
    try {
      response = await this.options.send(this.options.platformOrigin + req.url!, {
        method,
        headers: forwardedRequestHeaders(req.rawHeaders),
        body: body?.length ? body : undefined,
        redirect: 'manual',
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted) return void res.destroy();
      const failure = platformFailure(error);
      this.options.report?.(`${method} ${pathOf(req.url!)}: ${failure.status} ${failure.error}: ${failure.message}`);
      return answer(res, failure);
    }
    res.writeHead(response.status, returnedResponseHeaders(response, this.options.platformOrigin));
    if (response.body === null || method === 'HEAD') {
      await response.body?.cancel();
      return void res.end();
    }
    const limit = this.options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
    try {
      await pipeline(Readable.fromWeb(response.body), byteLimit(limit), res, {
        signal: controller.signal,
      });
    } catch (error) {
      // The status line is out: the client sees the body cut short, the person running the proxy why.
      if (!controller.signal.aborted)
        this.options.report?.(`${method} ${pathOf(req.url!)}: the answer was cut: ${(error as Error).message}`);
      res.destroy();
    }
  }

  private refusal(req: IncomingMessage): ProxyAnswer | undefined {
    const problem = targetProblem(req.url, this.options.platformOrigin);
    if (problem) return { status: 400, error: 'invalid_target', message: problem };
    if (!isAcceptedHost(req.headers.host, { host: this.options.host, port: this.port })) {
      return {
        status: 400,
        error: 'invalid_host',
        message: `the Host header must name this proxy (127.0.0.1:${this.port} or localhost:${this.port})`,
      };
    }
    if (isFromBrowser(req.headers)) {
      return {
        status: 403,
        error: 'browser_refused',
        message:
          'the proxy adds a token to what it forwards: it refuses requests a web page makes (Origin, Sec-Fetch-Site)',
      };
    }
    if (REFUSED_METHODS.has(req.method ?? '')) {
      return { status: 405, error: 'method_not_allowed', message: `${req.method} is never forwarded` };
    }
    return undefined;
  }
}

/** Why the platform could not be reached with a token, as the client gets it: the error's fields, never a secret. */
function platformFailure(error: unknown): ProxyAnswer {
  if (error instanceof TokenExchangeError) {
    const { code, reason, status, oauthError, hint } = error;
    return {
      status: 502,
      error: 'token_unavailable',
      message: `no access token: ${error.message}`,
      details: { code, reason, status, oauthError, hint },
    };
  }
  if (error instanceof PlatformAuthError)
    return { status: 502, error: 'token_unavailable', message: error.message, details: { code: error.code } };
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  return {
    status: 502,
    error: 'platform_unreachable',
    message: `the platform did not answer${typeof cause === 'string' ? ` (${cause})` : ''}`,
  };
}

function answer(res: ServerResponse, { status, error, message, details }: ProxyAnswer): void {
  const body = JSON.stringify({ error, message, ...details });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** The body, or undefined once it passes `limit` bytes (a `Content-Length` over it is refused before reading). */
async function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

function byteLimit(limit: number): Transform {
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      size += chunk.length;
      if (size > limit) callback(new Error(`it passed ${limit} bytes`));
      else callback(null, chunk);
    },
  });
}

/** The path without its query, which may hold what the caller would not want in a terminal's scrollback. */
function pathOf(target: string): string {
  const query = target.indexOf('?');
  return query < 0 ? target : target.slice(0, query);
}
