import axios, { AxiosError, AxiosHeaders, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import { detachedConfig } from '../error-detach.js';
import { detachedRequest, leavingError } from '../redaction.util.js';
import { isRedirectStatus, redirectDroppedHeaders } from '../engine/redirect.rules.js';
import { isNonReplayable, parseUrl, requestProtocol } from '../request-target.util.js';
import type { BearerPolicy } from '../engine/bearer.policy.js';
import { followRedirects, type Answers, type Followed, type HopClient } from '../engine/redirect-follow.js';

/** What follow-redirects, axios's default, allows when `maxRedirects` is not set. */
const DEFAULT_MAX_REDIRECTS = 21;
/** The fetch adapter's options of a hop whose config names none: one object for every such request. */
const MANUAL_REDIRECT = Object.freeze({ redirect: 'manual' as const });

type NextHop = Parameters<HopClient<InternalAxiosRequestConfig, AxiosResponse>['next']>[1];

export type Adapter = (config: InternalAxiosRequestConfig) => Promise<AxiosResponse>;
type RedirectHook = (
  options: Record<string, unknown>,
  responseDetails: { headers: unknown; statusCode: number },
  requestDetails: { url: string; method: string; headers: Record<string, unknown> },
) => void;

/** An axios response as the engine reads it. */
export const AXIOS_ANSWERS: Answers<AxiosResponse> = {
  status: (response) => response.status,
  header: (response, name) => AxiosHeaders.from(response.headers as AxiosHeaders).get(name),
  /** The end of a body read for nothing (a redirect, a 401 or a 503 about to be re-sent), so its socket is freed. */
  discard(response) {
    const data = response.data as { destroy?: () => void } | ReadableStream | undefined;
    if (data instanceof ReadableStream) data.cancel().catch(() => undefined);
    else if (typeof data?.destroy === 'function') data.destroy();
  },
};

/**
 * One send of the axios path, redirects followed: each request sent is a copy of the caller's config (a "hop") with
 * the header, `maxRedirects: 0` and every status accepted, so the library sees each redirect itself. Which hops carry
 * the token is `RedirectChain`'s rule.
 */
export class AxiosHops {
  constructor(private readonly policy: BearerPolicy) {}

  async follow(
    adapter: Adapter,
    config: InternalAxiosRequestConfig,
    token: string,
    tokens: readonly string[],
  ): Promise<Followed<AxiosResponse>> {
    const request = this.hop(config, this.headersFor(config.headers, token), {}, this.firstProtocol(config));
    const first = await send(adapter, request, config, tokens);
    if (!isRedirectStatus(first.status)) return { response: first, carried: true };
    const url = parseUrl(axios.getUri(config));
    if (!url) return { response: first, carried: true };
    const limit = config.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    const client = new AxiosHopClient(this, adapter, config, tokens);
    return followRedirects(client, (next) => this.policy.isAllowed(next), { request, url, token, first, limit });
  }

  headersFor(from: AxiosHeaders, token: string | undefined): AxiosHeaders {
    const headers = new AxiosHeaders(from);
    if (token === undefined) headers.delete('Authorization');
    else headers.set('Authorization', this.policy.bearer(token));
    return headers;
  }

  /** One request as sent: a copy of the caller's config; axios follows no redirect and accepts every status. */
  hop(
    config: InternalAxiosRequestConfig,
    headers: AxiosHeaders,
    overrides: Partial<InternalAxiosRequestConfig>,
    protocol: string | undefined,
  ): InternalAxiosRequestConfig {
    const direct = this.policy.clearTextAllowed && config.proxy === undefined && protocol === 'http:';
    return {
      ...config,
      ...overrides,
      headers,
      maxRedirects: 0,
      beforeRedirect: undefined,
      validateStatus: null,
      fetchOptions: config.fetchOptions ? { ...(config.fetchOptions as object), redirect: 'manual' } : MANUAL_REDIRECT,
      ...(direct && { proxy: false }),
    };
  }

  private firstProtocol(config: InternalAxiosRequestConfig): string | undefined {
    return this.policy.clearTextAllowed && config.proxy === undefined ? requestProtocol(config) : undefined;
  }
}

/** One hop of the axios path through the adapter; what reaches the caller from a failed hop carries no token. */
function send(
  adapter: Adapter,
  hop: InternalAxiosRequestConfig,
  config: InternalAxiosRequestConfig,
  tokens: readonly string[],
): Promise<AxiosResponse> {
  return adapter(hop).catch((error: unknown) => {
    throw leavingError(error, config, tokens);
  });
}

/**
 * The next hop's headers, before the token: the caller's, without cookies once the chain changed origin (what
 * follow-redirects does), without the body's headers when the body is dropped, then the caller's `beforeRedirect`.
 */
function redirectHeaders(
  config: InternalAxiosRequestConfig,
  hop: InternalAxiosRequestConfig,
  how: NextHop,
): AxiosHeaders {
  const { from, to, response } = how;
  const method = (hop.method ?? 'get').toUpperCase();
  // From the hop before, as follow-redirects does: what an earlier hop dropped (the body's headers after a 303, a
  // cookie once the origin changed) or the caller's `beforeRedirect` changed stays so.
  const headers = new AxiosHeaders(hop.headers);
  headers.delete('Authorization');
  for (const name of redirectDroppedHeaders(how)) headers.delete(name);
  const hook = config.beforeRedirect as RedirectHook | undefined;
  if (!hook) return headers;
  const options: Record<string, unknown> = {
    protocol: to.protocol,
    hostname: to.hostname,
    port: to.port,
    path: `${to.pathname}${to.search}`,
    href: to.href,
    method: how.dropsBody ? 'GET' : method,
    headers: headers.toJSON(),
  };
  const sent = new AxiosHeaders(hop.headers);
  sent.delete('Authorization');
  hook(
    options,
    { headers: response.headers, statusCode: response.status },
    { url: from.href, method, headers: sent.toJSON() },
  );
  return new AxiosHeaders(options.headers as Record<string, string>);
}

/** The axios path as `followRedirects` sees it: hops are copies of the caller's config. */
class AxiosHopClient implements HopClient<InternalAxiosRequestConfig, AxiosResponse> {
  readonly answers = AXIOS_ANSWERS;

  constructor(
    private readonly hops: AxiosHops,
    private readonly adapter: Adapter,
    private readonly config: InternalAxiosRequestConfig,
    private readonly tokens: readonly string[],
  ) {}

  send(request: InternalAxiosRequestConfig, _url: URL, token: string | undefined): Promise<AxiosResponse> {
    request.headers = this.hops.headersFor(request.headers, token);
    return send(this.adapter, request, this.config, this.tokens);
  }

  method(request: InternalAxiosRequestConfig): string {
    return request.method ?? 'get';
  }

  replayable(request: InternalAxiosRequestConfig): boolean {
    return !isNonReplayable(request.data);
  }

  /** The request of the hop from `request`'s URL to `how.to`, its headers before the token (`send` adds it). */
  next(request: InternalAxiosRequestConfig, how: NextHop): InternalAxiosRequestConfig {
    const keepsBody = !how.dropsBody;
    const overrides = {
      url: how.to.href,
      baseURL: undefined,
      params: undefined,
      method: keepsBody ? request.method : 'get',
      data: keepsBody ? (request.data as unknown) : undefined,
    };
    return this.hops.hop(this.config, redirectHeaders(this.config, request, how), overrides, how.to.protocol);
  }

  /** follow-redirects' own error for a chain over `maxRedirects`, as axios gives it. */
  tooMany(response: AxiosResponse): AxiosError {
    return new AxiosError(
      'Maximum number of redirects exceeded',
      'ERR_FR_TOO_MANY_REDIRECTS',
      detachedConfig(this.config),
      detachedRequest(response.request),
    );
  }

  /** A `Location` that is not a URL: the redirect is the answer, as follow-redirects would leave it. */
  badLocation(): undefined {
    return undefined;
  }
}
