import axios, { AxiosError, AxiosHeaders, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import { detachedRequest, leavingError } from './redaction.util.js';
import { isRedirectStatus, RedirectChain, redirectDropsBody } from './redirect.rules.js';
import { parseUrl, requestProtocol } from './request-target.util.js';
import type { BearerPolicy } from './transport/bearer.policy.js';

/** What follow-redirects, axios's default, allows when `maxRedirects` is not set. */
const DEFAULT_MAX_REDIRECTS = 21;
/** The fetch adapter's options of a hop whose config names none: one object for every such request. */
const MANUAL_REDIRECT = Object.freeze({ redirect: 'manual' as const });

export type Adapter = (config: InternalAxiosRequestConfig) => Promise<AxiosResponse>;
type RedirectHook = (
  options: Record<string, unknown>,
  responseDetails: { headers: unknown; statusCode: number },
  requestDetails: { url: string; method: string; headers: Record<string, unknown> },
) => void;

export interface Outcome {
  readonly response: AxiosResponse;
  /** Whether the request that got this response carried the token: only then can a 401 be blamed on it. */
  readonly carried: boolean;
}

/** The end of a body read for nothing (a redirect, a 401 or a 503 about to be re-sent), so its socket is freed. */
export function discard(response: AxiosResponse): void {
  const data = response.data as { destroy?: () => void } | ReadableStream | undefined;
  if (data instanceof ReadableStream) data.cancel().catch(() => undefined);
  else if (typeof data?.destroy === 'function') data.destroy();
}

/**
 * One send of the axios path, redirects followed: each request sent is a copy of the caller's config (a "hop") with
 * the header, `maxRedirects: 0` and every status accepted, so the library sees each redirect itself. Which hops carry
 * the token is `RedirectChain`'s rule.
 */
export class AxiosHops {
  constructor(
    private readonly policy: BearerPolicy,
    /** Allowed `http:` (loopback) origins exist: their requests must not go through an environment proxy in clear. */
    private readonly clearTextAllowed: boolean,
  ) {}

  async follow(
    adapter: Adapter,
    config: InternalAxiosRequestConfig,
    token: string,
    tokens: readonly string[],
  ): Promise<Outcome> {
    const limit = config.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    let hop = this.hop(config, this.headersFor(config.headers, token), {}, this.firstProtocol(config));
    const chain = new RedirectChain((url) => this.policy.isAllowed(url));
    let crossed = false;
    let url: URL | undefined;
    for (let redirects = 0; ; redirects += 1) {
      let response: AxiosResponse;
      try {
        response = await adapter(hop);
      } catch (error) {
        throw leavingError(error, config, tokens);
      }
      const carried = chain.carries;
      if (limit === 0 || !isRedirectStatus(response.status)) return { response, carried };
      const location: unknown = AxiosHeaders.from(response.headers as AxiosHeaders).get('Location');
      if (typeof location !== 'string') return { response, carried };
      const method = (hop.method ?? 'get').toUpperCase();
      const keepsBody = !redirectDropsBody(response.status, method);
      // A stream is gone once sent: the redirect goes back to the caller, as with `maxRedirects: 0`.
      if (keepsBody && !this.policy.isReplayable(hop.data)) return { response, carried };
      const from = url ?? parseUrl(axios.getUri(config));
      const next = from && parseUrl(location, from);
      if (!from || !next) return { response, carried };
      if (redirects >= limit) {
        discard(response);
        throw new AxiosError(
          'Maximum number of redirects exceeded',
          'ERR_FR_TOO_MANY_REDIRECTS',
          config,
          detachedRequest(response.request),
        );
      }
      discard(response);
      const carries = chain.follow(next);
      crossed ||= next.origin !== from.origin;
      const headers = this.redirectHeaders(config, hop, response, from, next, { keepsBody, crossed, method });
      hop = this.hop(
        config,
        this.headersFor(headers, carries ? token : undefined),
        {
          url: next.href,
          baseURL: undefined,
          params: undefined,
          method: keepsBody ? hop.method : 'get',
          data: keepsBody ? (hop.data as unknown) : undefined,
        },
        next.protocol,
      );
      url = next;
    }
  }

  /**
   * The next hop's headers, before the token: the caller's, without cookies once the chain changed origin (what
   * follow-redirects does), without the body's headers when the body is dropped, then the caller's `beforeRedirect`.
   */
  private redirectHeaders(
    config: InternalAxiosRequestConfig,
    hop: InternalAxiosRequestConfig,
    response: AxiosResponse,
    from: URL,
    next: URL,
    how: { keepsBody: boolean; crossed: boolean; method: string },
  ): AxiosHeaders {
    const headers = new AxiosHeaders(config.headers);
    headers.delete('Authorization');
    if (how.crossed) {
      headers.delete('Cookie');
      headers.delete('Proxy-Authorization');
    }
    if (!how.keepsBody) {
      headers.delete('Content-Type');
      headers.delete('Content-Length');
    }
    const hook = config.beforeRedirect as RedirectHook | undefined;
    if (!hook) return headers;
    const options: Record<string, unknown> = {
      protocol: next.protocol,
      hostname: next.hostname,
      port: next.port,
      path: `${next.pathname}${next.search}`,
      href: next.href,
      method: how.keepsBody ? how.method : 'GET',
      headers: headers.toJSON(),
    };
    const sent = new AxiosHeaders(hop.headers);
    sent.delete('Authorization');
    hook(
      options,
      { headers: response.headers, statusCode: response.status },
      { url: from.href, method: how.method, headers: sent.toJSON() },
    );
    return new AxiosHeaders(options.headers as Record<string, string>);
  }

  private headersFor(from: AxiosHeaders, token: string | undefined): AxiosHeaders {
    const headers = new AxiosHeaders(from);
    if (token === undefined) headers.delete('Authorization');
    else headers.set('Authorization', `Bearer ${token}`);
    return headers;
  }

  /** One request as sent: a copy of the caller's config; axios follows no redirect and accepts every status. */
  private hop(
    config: InternalAxiosRequestConfig,
    headers: AxiosHeaders,
    overrides: Partial<InternalAxiosRequestConfig>,
    protocol: string | undefined,
  ): InternalAxiosRequestConfig {
    const direct = this.clearTextAllowed && config.proxy === undefined && protocol === 'http:';
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
    return this.clearTextAllowed && config.proxy === undefined ? requestProtocol(config) : undefined;
  }
}
