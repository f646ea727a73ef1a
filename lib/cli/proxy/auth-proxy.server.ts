import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PlatformFetchInit } from '../../http/clients/platform-fetch.js';
import { sanitizeRemoteText } from '../../util/remote-text.util.js';
import {
  PROXY_KEY_HEADER,
  REFUSED_METHODS,
  carriesKey,
  forwardedRequestHeaders,
  isAcceptedHost,
  isFromBrowser,
  keyDigest,
  resolveTarget,
  returnedResponseHeaders,
} from './auth-proxy.rules.js';
import { answer, busy, platformFailure, refuse, type ProxyAnswer } from './auth-proxy.answers.js';

const MiB = 1024 * 1024;
/** The proxy's bounds, as docs/cli.md lists them; `AuthProxyOptions` can set each lower (the tests do). */
const AUTH_PROXY_LIMITS = {
  /** A request body is held whole, so that a 401 can be answered by one re-send: the module never re-sends a stream. */
  maxRequestBytes: 16 * MiB,
  /**
   * The bodies held at once, all requests together, from the first byte read until the platform has answered: what
   * bounds the proxy's memory under any load. One body of the largest size still fits, with room for three more.
   */
  maxBufferedBytes: 64 * MiB,
  /** A response is streamed, and cut when it grows past this: a local tool should not relay without end. */
  maxResponseBytes: 256 * MiB,
  /** Requests on their way to the platform at once. */
  maxInFlight: 64,
  /** Connections open at once (Node closes the ones beyond): above `maxInFlight`, so that a client hears a 503. */
  maxConnections: 256,
  /** A client on this machine or its network sends its headers at once, and its largest body well within a minute. */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
} as const;
type AuthProxyLimits = { readonly [name in keyof typeof AUTH_PROXY_LIMITS]: number };

export interface AuthProxyOptions extends Partial<AuthProxyLimits> {
  readonly host: string;
  readonly port: number;
  /** The platform's origin (`https://platform.example`): every request goes there, and nowhere else. */
  readonly platformOrigin: string;
  /** Sends one request with the integration's token: the module's `PlatformFetch.fetch`. */
  readonly send: (url: string, init: PlatformFetchInit) => Promise<Response>;
  /** When set, only requests that carry it in `X-Platform-Proxy-Key` are forwarded. */
  readonly key?: string;
  /** A line for the person running the proxy: a request that failed on the way to the platform, and why. */
  readonly report?: (line: string) => void;
}

/** A request body, or the answer that refuses it. */
type BodyRead = { readonly body: Blob; readonly refused?: undefined } | { readonly refused: ProxyAnswer };

/**
 * `platform-auth proxy`: forwards `http://127.0.0.1:8787/<path>` to the platform's origin with the integration's
 * bearer token, through the module's own `PlatformFetch` (token cached and renewed, one re-send after a 401). It
 * refuses what could send the token elsewhere or let a web page use it: another origin in the request target, a
 * `Host` that does not name the proxy (DNS rebinding), a browser's request, a request without the key when it has
 * one, TRACE, CONNECT and OPTIONS. What it holds at once is bounded: a request over a limit is answered 503.
 */
export class AuthProxy {
  readonly url: string;
  private readonly inFlight = new Set<AbortController>();
  private readonly limits: AuthProxyLimits;
  private readonly keyDigest?: Buffer;
  /** Bytes of request bodies held now, all requests together. */
  private bufferedBytes = 0;
  private closed?: Promise<void>;

  private constructor(
    private readonly server: Server,
    private readonly options: AuthProxyOptions,
    private readonly port: number,
  ) {
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    this.url = `http://${host}:${port}`;
    this.limits = limitsOf(options);
    this.keyDigest = options.key === undefined ? undefined : keyDigest(options.key);
    // A client that hangs up in the middle of its body ends its own request, nothing else.
    server.on('request', (req, res) => void this.handle(req, res).catch(() => res.destroy()));
  }

  /** Listens on `host:port` and resolves once connections are accepted; rejects with the listen error. */
  static async start(options: AuthProxyOptions): Promise<AuthProxy> {
    const limits = limitsOf(options);
    const server = createServer({ headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs });
    server.maxConnections = limits.maxConnections;
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
    const target = resolveTarget(req.url, this.options.platformOrigin);
    if (target.problem !== undefined)
      return answer(res, { status: 400, error: 'invalid_target', message: target.problem });
    const refusal = this.refusal(req);
    if (refusal) return answer(res, refusal);
    if (this.inFlight.size >= this.limits.maxInFlight)
      return refuse(req, res, busy(`${this.limits.maxInFlight} requests are on their way to the platform`));
    const controller = new AbortController();
    this.inFlight.add(controller);
    let held = 0;
    const release = () => {
      this.bufferedBytes -= held;
      held = 0;
    };
    const take = (bytes: number): boolean => {
      if (this.bufferedBytes + bytes > this.limits.maxBufferedBytes) return false;
      this.bufferedBytes += bytes;
      held += bytes;
      return true;
    };
    // The client went away before its answer was complete: the platform call has nobody to answer.
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
      this.inFlight.delete(controller);
      release();
    });
    let outcome: Response | ProxyAnswer | undefined;
    try {
      outcome = await this.forward(req, target.url, controller.signal, take);
    } catch (error) {
      if (controller.signal.aborted) return void res.destroy();
      const failure = platformFailure(error);
      this.report(req, `${failure.status} ${failure.error}: ${failure.message}`);
      return answer(res, failure);
    } finally {
      // Answered or failed, the platform needs the body no more: it no longer counts against what others may send.
      release();
    }
    if (outcome === undefined) return void res.destroy();
    if (!(outcome instanceof Response)) return refuse(req, res, outcome);
    const response = outcome;
    const proxyOrigin = `http://${req.headers.host!}`;
    res.writeHead(
      response.status,
      returnedResponseHeaders(response, this.options.platformOrigin, target.url, proxyOrigin),
    );
    if (response.body === null || req.method === 'HEAD') {
      await response.body?.cancel();
      return void res.end();
    }
    try {
      await pipeline(Readable.fromWeb(response.body), byteLimit(this.limits.maxResponseBytes), res, {
        signal: controller.signal,
      });
    } catch (error) {
      // The status line is out: the client sees the body cut short, the person running the proxy why.
      if (!controller.signal.aborted)
        this.report(req, `the answer was cut: ${sanitizeRemoteText((error as Error).message) ?? 'unknown error'}`);
      res.destroy();
    }
  }

  private refusal(req: IncomingMessage): ProxyAnswer | undefined {
    if (!isAcceptedHost(req.headers.host, { host: this.options.host, port: this.port })) {
      return {
        status: 400,
        error: 'invalid_host',
        message: `the Host header must name this proxy (127.0.0.1:${this.port} or localhost:${this.port}, or the address it listens on)`,
      };
    }
    if (isFromBrowser(req.headers)) {
      return {
        status: 403,
        error: 'browser_refused',
        message:
          'the proxy adds a token to what it forwards: it refuses requests a web page makes (Origin, Sec-Fetch-Site, Sec-Fetch-Dest, Sec-Fetch-User)',
      };
    }
    if (REFUSED_METHODS.has(req.method ?? '')) {
      return { status: 405, error: 'method_not_allowed', message: `${req.method} is never forwarded` };
    }
    if (this.keyDigest && !carriesKey(req.headers, this.keyDigest)) {
      return {
        status: 403,
        error: 'proxy_key_required',
        message: `the proxy forwards only requests that carry its key in ${PROXY_KEY_HEADER}: the key it printed when it started`,
      };
    }
    return undefined;
  }

  /**
   * Reads the body and sends the request: the platform's answer, the refusal of a body over a bound (413, 503), or
   * undefined when the client left before its body ended. The body is held until this returns, and no longer.
   */
  private async forward(
    req: IncomingMessage,
    url: string,
    signal: AbortSignal,
    take: (bytes: number) => boolean,
  ): Promise<Response | ProxyAnswer | undefined> {
    const method = req.method!;
    let body: Blob | undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      const read = await this.readBody(req, take);
      if (read === undefined || read.refused) return read?.refused;
      body = read.body;
    }
    return this.options.send(url, {
      method,
      headers: forwardedRequestHeaders(req.rawHeaders),
      body: body?.size ? body : undefined,
      redirect: 'manual',
      signal,
    });
  }

  /**
   * The body, held within the bounds: one body at most `maxRequestBytes` (413), all bodies held at once at most
   * `maxBufferedBytes` (503). A declared `Content-Length` is checked and taken before anything is read.
   */
  private readBody(req: IncomingMessage, take: (bytes: number) => boolean): Promise<BodyRead | undefined> {
    const { maxRequestBytes, maxBufferedBytes } = this.limits;
    const tooLarge = {
      status: 413,
      error: 'request_too_large',
      message: `the proxy forwards request bodies of at most ${maxRequestBytes} bytes`,
    };
    const full = busy(`the proxy holds ${maxBufferedBytes} bytes of request bodies`);
    const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
    if (declared !== undefined && declared > maxRequestBytes) return Promise.resolve({ refused: tooLarge });
    if (declared !== undefined && !take(declared)) return Promise.resolve({ refused: full });
    // Each chunk is copied into a Blob as it arrives and the whole is a Blob of those: the body is held once, and
    // fetch sends a Blob without another copy of it for each attempt.
    const parts: Blob[] = [];
    let size = 0;
    return new Promise<BodyRead | undefined>((resolve) => {
      const settle = (outcome: BodyRead | undefined) => {
        req.off('data', onData).off('end', onEnd).off('close', onClose);
        req.pause();
        resolve(outcome);
      };
      const onData = (chunk: Buffer) => {
        if (size + chunk.length > maxRequestBytes) return settle({ refused: tooLarge });
        if (declared === undefined && !take(chunk.length)) return settle({ refused: full });
        parts.push(new Blob([chunk]));
        size += chunk.length;
      };
      const onEnd = () => settle({ body: new Blob(parts) });
      const onClose = () => settle(undefined);
      req.on('data', onData).once('end', onEnd).once('close', onClose);
    });
  }

  private report(req: IncomingMessage, line: string): void {
    this.options.report?.(`${req.method} ${sanitizeRemoteText(pathOf(req.url!))}: ${line}`);
  }
}

function limitsOf(options: AuthProxyOptions): AuthProxyLimits {
  const limits = { ...AUTH_PROXY_LIMITS } as Record<keyof AuthProxyLimits, number>;
  for (const name of Object.keys(AUTH_PROXY_LIMITS) as Array<keyof AuthProxyLimits>)
    if (options[name] !== undefined) limits[name] = options[name];
  return limits;
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
