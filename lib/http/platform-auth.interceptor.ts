import type { Readable } from 'node:stream';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import {
  AxiosHeaders,
  getAdapter,
  isAxiosError,
  type AxiosAdapter,
  type AxiosInstance,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { PLATFORM_AUTH_CONFIG } from '../platform-auth.constants.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { redactAxiosError } from './redaction.util.js';
import { TokenProvider } from '../token/token.provider.js';
import { PlatformAuthTelemetry } from '../telemetry/telemetry.service.js';

const ABSOLUTE_URL = /^([a-z][a-z\d+\-.]*:)?\/\//i;
/** Caches keyed by request options stop growing here: a few shared values are the point, not every one-off. */
const CACHE_LIMIT = 64;
/** The cached token that `runWhen` saw, for the synchronous interceptor that runs right after it. */
const PEEKED_TOKEN = Symbol('platformAuthPeekedToken');

type PeekedConfig = InternalAxiosRequestConfig & { [PEEKED_TOKEN]?: string };

/** The URL axios will request, resolved the way axios resolves it (`baseURL` + `url`, or an absolute `url`). */
export function resolveRequestUrl(
  config: Pick<InternalAxiosRequestConfig, 'url' | 'baseURL' | 'allowAbsoluteUrls'>,
): URL | undefined {
  const url = config.url ?? '';
  const useBase = config.baseURL && (!ABSOLUTE_URL.test(url) || config.allowAbsoluteUrls === false);
  const full = useBase
    ? url
      ? `${config.baseURL!.replace(/\/?\/$/, '')}/${url.replace(/^\/+/, '')}`
      : config.baseURL!
    : url;
  return parseUrl(full);
}

function parseUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** A redirect option as text: node's request options hold strings and numbers. */
function textOf(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

function isStream(data: unknown): data is Readable {
  return typeof data === 'object' && data !== null && typeof (data as Readable).pipe === 'function';
}

/** Where the response came from: after redirects (follow-redirects records it), else the URL that was requested. */
function respondingUrl(response: AxiosResponse | undefined, config: InternalAxiosRequestConfig): URL | undefined {
  const request = response?.request as { res?: { responseUrl?: unknown } } | undefined;
  return parseUrl(request?.res?.responseUrl) ?? resolveRequestUrl(config);
}

/**
 * Adds `Authorization: Bearer <token>` to requests for allowed origins only, and on a 401 from such an origin
 * renews the token and re-sends once. Attach it to any axios instance; `PlatformAuthModule` attaches it to the
 * instance behind its `HttpService` and detaches it on shutdown.
 *
 * The re-send happens inside the request's adapter, so the caller's own interceptors see one request and one
 * response, as if the first 401 had never happened.
 */
@Injectable()
export class PlatformAuthInterceptor implements OnApplicationShutdown {
  private readonly registrations = new Map<AxiosInstance, readonly number[]>();
  /** Per `baseURL`: whether it is allowed. A relative URL always resolves to its base's origin (see `resolveRequestUrl`). */
  private readonly allowedBases = new Map<string, boolean>();
  /** Resolved adapters by their configured form (a name, a list or a function), so the hot path resolves each once. */
  private readonly adapters = new Map<unknown, AxiosAdapter>();
  private readonly stripOnForeignRedirectHook = (options: Record<string, unknown>) =>
    this.stripOnForeignRedirect(options);
  /** `origin + '/'` of each allowed origin: an absolute URL starting with one needs no parsing to be known allowed. */
  private readonly allowedPrefixes: readonly string[];

  constructor(
    private readonly tokens: TokenProvider,
    @Inject(PLATFORM_AUTH_CONFIG) private readonly config: ResolvedPlatformAuthConfig,
    private readonly telemetry: PlatformAuthTelemetry,
  ) {
    this.allowedPrefixes = [...config.allowedOrigins].map((origin) => `${origin}/`);
  }

  /**
   * Installs the interceptor on `instance` (once; a second call is a no-op) and returns a function removing it.
   * Two request interceptors, exclusive by `runWhen`: with a token cached, a `synchronous` one, which lets axios send
   * the request in the same turn instead of chaining a promise per request (axios does that as soon as one
   * interceptor is asynchronous); otherwise the one that waits for a token. Both leave a request that already has
   * an Authorization header alone, so one that meets both (the token going stale between the two `runWhen`s) is
   * still authorized once.
   */
  attach(instance: AxiosInstance): () => void {
    if (!this.registrations.has(instance)) {
      this.registrations.set(instance, [
        instance.interceptors.request.use((config) => this.authorizeWithPeekedToken(config), undefined, {
          synchronous: true,
          runWhen: (config: PeekedConfig) => (config[PEEKED_TOKEN] = this.tokens.peekAccessToken()) !== undefined,
        }),
        instance.interceptors.request.use((config) => this.authorize(config), undefined, {
          runWhen: () => this.tokens.peekAccessToken() === undefined,
        }),
      ]);
    }
    return () => this.detach(instance);
  }

  detach(instance: AxiosInstance): void {
    const registration = this.registrations.get(instance);
    if (registration === undefined) return;
    for (const id of registration) instance.interceptors.request.eject(id);
    this.registrations.delete(instance);
  }

  /** At application shutdown, after Nest's drain: requests of handlers still running keep their token. */
  onApplicationShutdown(): void {
    for (const instance of [...this.registrations.keys()]) this.detach(instance);
  }

  /** Whether requests to `url` may carry the token: same scheme, host and port as an allowed origin, no userinfo. */
  isAllowed(url: URL | undefined): boolean {
    return url !== undefined && !url.username && !url.password && this.config.allowedOrigins.has(url.origin);
  }

  /** Synchronous when the token is cached (the common case), so a request costs no extra promise turns. */
  private authorize(
    config: InternalAxiosRequestConfig,
  ): InternalAxiosRequestConfig | Promise<InternalAxiosRequestConfig> {
    const headers = AxiosHeaders.from(config.headers);
    config.headers = headers;
    if (headers.has('Authorization') || !this.targetsAllowedOrigin(config)) return config;
    const cached = this.tokens.peekAccessToken();
    if (cached !== undefined) return this.withToken(config, cached);
    return this.tokens.getAccessToken().then((token) => this.withToken(config, token));
  }

  private authorizeWithPeekedToken(config: PeekedConfig): InternalAxiosRequestConfig {
    const token = config[PEEKED_TOKEN]!;
    delete config[PEEKED_TOKEN];
    const headers = AxiosHeaders.from(config.headers);
    config.headers = headers;
    if (headers.has('Authorization') || !this.targetsAllowedOrigin(config)) return config;
    return this.withToken(config, token);
  }

  private targetsAllowedOrigin(config: InternalAxiosRequestConfig): boolean {
    const { baseURL, url } = config;
    if (!baseURL || (url && ABSOLUTE_URL.test(url) && config.allowAbsoluteUrls !== false)) {
      // A URL that starts with a normalised origin and '/' cannot parse to another origin; anything else (other
      // case, default port, userinfo) is left to the parser.
      if (url && this.allowedPrefixes.some((prefix) => url.startsWith(prefix))) return true;
      return this.isAllowed(resolveRequestUrl(config));
    }
    let allowed = this.allowedBases.get(baseURL);
    if (allowed === undefined) {
      allowed = this.isAllowed(parseUrl(baseURL));
      if (this.allowedBases.size < CACHE_LIMIT) this.allowedBases.set(baseURL, allowed);
    }
    return allowed;
  }

  private withToken(config: InternalAxiosRequestConfig, token: string): InternalAxiosRequestConfig {
    config.headers.set('Authorization', `Bearer ${token}`);
    const callerHook = config.beforeRedirect;
    config.beforeRedirect = callerHook
      ? (options, responseDetails, requestDetails) => {
          this.stripOnForeignRedirect(options);
          callerHook(options, responseDetails, requestDetails);
        }
      : this.stripOnForeignRedirectHook;
    const adapter = this.resolveAdapter(config);
    config.adapter = (request) => this.send(adapter, request, token);
    return config;
  }

  private resolveAdapter(config: InternalAxiosRequestConfig): AxiosAdapter {
    // A custom fetch in `env` makes the resolved adapter specific to this request.
    const cacheable = (config.env as { fetch?: unknown } | undefined)?.fetch === undefined;
    let adapter = cacheable ? this.adapters.get(config.adapter) : undefined;
    if (!adapter) {
      adapter = getAdapter(config.adapter, config);
      if (cacheable && this.adapters.size < CACHE_LIMIT) this.adapters.set(config.adapter, adapter);
    }
    return adapter;
  }

  /** One request, and on a 401 from an allowed origin one re-send with a fresh token; errors leave redacted. */
  private async send(adapter: AxiosAdapter, config: InternalAxiosRequestConfig, token: string): Promise<AxiosResponse> {
    let response: AxiosResponse;
    try {
      response = await adapter(config);
    } catch (error) {
      if (!isAxiosError(error) || !this.mayRenewAfter(error.response, config)) throw this.redacted(error, token);
      return this.resend(adapter, config, token);
    }
    return this.mayRenewAfter(response, config) ? this.resend(adapter, config, token) : response;
  }

  private async resend(
    adapter: AxiosAdapter,
    config: InternalAxiosRequestConfig,
    sent: string,
  ): Promise<AxiosResponse> {
    this.tokens.invalidate(sent);
    this.telemetry.reauthenticated();
    const fresh = await this.tokens.getAccessToken();
    config.headers.set('Authorization', `Bearer ${fresh}`);
    try {
      return await adapter(config);
    } catch (error) {
      throw this.redacted(this.redacted(error, sent), fresh);
    }
  }

  /** A 401 that the token can be blamed for, and a body that can be sent again. */
  private mayRenewAfter(response: AxiosResponse | undefined, config: InternalAxiosRequestConfig): boolean {
    return response?.status === 401 && !isStream(config.data) && this.isAllowed(respondingUrl(response, config));
  }

  private stripOnForeignRedirect(options: Record<string, unknown>): void {
    const hostname = textOf(options.hostname) ?? textOf(options.host) ?? '';
    const host = hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname;
    const target =
      parseUrl(options.href) ??
      parseUrl(`${String(options.protocol)}//${host}${textOf(options.port) ? `:${textOf(options.port)}` : ''}`);
    if (this.isAllowed(target)) return;
    const headers = options.headers as Record<string, unknown> | undefined;
    for (const name of Object.keys(headers ?? {})) if (name.toLowerCase() === 'authorization') delete headers![name];
  }

  private redacted(error: unknown, token: string): unknown {
    redactAxiosError(error, token);
    return error;
  }
}
