import {
  AxiosHeaders,
  getAdapter,
  isAxiosError,
  type AxiosAdapter,
  type AxiosInstance,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { recordingFetch } from './fetch-responding-url.util.js';
import { REDACTED_BEARER, redactAxiosError, redactResponse } from './redaction.util.js';
import {
  isAbsoluteUrl,
  isAllowedUrl,
  isNonReplayable,
  parseUrl,
  resolveRequestUrl,
  respondingUrl,
  textOf,
  urlText,
} from './request-target.util.js';
import type { TokenProvider } from '../token/token.provider.js';

/** Caches keyed by request options stop growing here: a few shared values are the point, not every one-off. */
const CACHE_LIMIT = 64;

type BeforeRedirect = InternalAxiosRequestConfig['beforeRedirect'];

/**
 * What `prepare` replaced on a config, so that a config sent again is known as ours; and the header `send` set, in a
 * private field, since the object hangs off the config's adapter where any inspection of the config can see it.
 */
class Prepared {
  #header?: string;

  constructor(
    readonly adapter: InternalAxiosRequestConfig['adapter'],
    readonly beforeRedirect: BeforeRedirect,
  ) {}

  get header(): string | undefined {
    return this.#header;
  }

  set header(value: string) {
    this.#header = value;
  }
}

type PreparedAdapter = AxiosAdapter & { [mark: symbol]: Prepared | undefined };

/**
 * Adds `Authorization: Bearer <token>` to requests for allowed origins only, and on a 401 from such an origin
 * renews the token and re-sends once. Attach it to any axios instance; `PlatformAuthModule` attaches it to the
 * instance behind its `HttpService` and detaches it on shutdown.
 *
 * The token is set inside the request's adapter, after every request interceptor has run, so no interceptor, log
 * line or inspected config ever holds it before it is on its way to an allowed origin. The re-send happens there
 * too, so the caller's own interceptors see one request and one response, as if the first 401 had never happened.
 *
 * Get it from the application (`app.get(PlatformAuthInterceptor)`, or injected); the module builds it.
 */
export class PlatformAuthInterceptor {
  private readonly registrations = new Map<AxiosInstance, number>();
  /** Per `baseURL`: whether it is allowed. A relative URL always resolves to its base's origin (see `resolveRequestUrl`). */
  private readonly allowedBases = new Map<string, boolean>();
  /** Resolved adapters by their configured form (a name, a list or a function), so the hot path resolves each once. */
  private readonly adapters = new Map<unknown, AxiosAdapter>();
  private readonly stripOnForeignRedirectHook = (options: Record<string, unknown>) =>
    this.stripOnForeignRedirect(options);
  /** Marks the adapters this interceptor installed (a property on the function: cheaper per request than a WeakMap). */
  private readonly mark = Symbol('platformAuthPrepared');
  /** `origin + '/'` of each allowed origin: an absolute URL starting with one needs no parsing to be known allowed. */
  private readonly allowedPrefixes: readonly string[];
  /** Allowed `http:` (loopback) origins exist: their requests must not go through an environment proxy in clear. */
  private readonly clearTextAllowed: boolean;

  /** @internal Only the composition root builds it; apps get it from the container. */
  constructor(
    private readonly tokens: TokenProvider,
    private readonly allowedOrigins: ReadonlySet<string>,
    private readonly observer: Pick<PlatformAuthObserver, 'reauthenticate'>,
  ) {
    this.allowedPrefixes = [...allowedOrigins].map((origin) => `${origin}/`);
    this.clearTextAllowed = [...allowedOrigins].some((origin) => origin.startsWith('http:'));
  }

  /** @internal Removes it from every instance it was attached to; the composition root calls it at shutdown. */
  detachAll(): void {
    for (const instance of [...this.registrations.keys()]) this.detach(instance);
  }

  /**
   * Installs the interceptor on `instance` (once; a second call is a no-op) and returns a function removing it. It
   * is `synchronous` and never waits, so axios sends the request in the same turn instead of chaining a promise per
   * request (axios does that as soon as one interceptor is asynchronous); a missing token is awaited in the adapter.
   */
  attach(instance: AxiosInstance): () => void {
    if (!this.registrations.has(instance)) {
      this.registrations.set(
        instance,
        instance.interceptors.request.use((config) => this.prepare(config), undefined, { synchronous: true }),
      );
    }
    return () => this.detach(instance);
  }

  detach(instance: AxiosInstance): void {
    const registration = this.registrations.get(instance);
    if (registration === undefined) return;
    instance.interceptors.request.eject(registration);
    this.registrations.delete(instance);
  }

  /** Whether requests to `url` may carry the token: same scheme, host and port as an allowed origin, no userinfo. */
  isAllowed(url: URL | undefined): boolean {
    return isAllowedUrl(url, this.allowedOrigins);
  }

  /**
   * Routes the request through `send`. A config this interceptor prepared before (the axios-retry pattern re-sends
   * `error.config`) gets back what it replaced, and loses the header it set (redacted by now, or a stale token).
   */
  private prepare(config: InternalAxiosRequestConfig): InternalAxiosRequestConfig {
    const headers = AxiosHeaders.from(config.headers);
    config.headers = headers;
    // axios takes a WHATWG URL only without a baseURL; as text it works with one too, and is checked as axios sends it.
    if ((config.url as unknown) instanceof URL) config.url = String(config.url);
    const earlier = typeof config.adapter === 'function' ? (config.adapter as PreparedAdapter)[this.mark] : undefined;
    if (earlier) {
      config.adapter = earlier.adapter;
      config.beforeRedirect = earlier.beforeRedirect;
      if (this.isOurs(headers.get('Authorization'), earlier)) headers.delete('Authorization');
    }
    const prepared = new Prepared(config.adapter, config.beforeRedirect);
    const adapter = this.resolveAdapter(config);
    const send = ((request) => this.send(adapter, request, prepared)) as PreparedAdapter;
    send[this.mark] = prepared;
    config.adapter = send;
    return config;
  }

  private isOurs(header: unknown, prepared: Prepared): boolean {
    return header === REDACTED_BEARER || (header !== undefined && header === prepared.header);
  }

  private targetsAllowedOrigin(config: InternalAxiosRequestConfig): boolean {
    const { baseURL } = config;
    const url = urlText(config.url);
    if (!baseURL || (isAbsoluteUrl(url) && config.allowAbsoluteUrls !== false)) {
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

  private resolveAdapter(config: InternalAxiosRequestConfig): AxiosAdapter {
    // A custom fetch in `env` makes the resolved adapter specific to this request.
    const env = config.env;
    const cacheable = env?.fetch === undefined;
    let adapter = cacheable ? this.adapters.get(config.adapter) : undefined;
    if (!adapter) {
      adapter = getAdapter(config.adapter, config);
      // The fetch adapter is given a fetch that records which URL answered (see `respondingUrl`).
      if (adapter === getAdapter('fetch', config))
        adapter = getAdapter('fetch', { env: { ...env, fetch: recordingFetch(env?.fetch) } });
      if (cacheable && this.adapters.size < CACHE_LIMIT) this.adapters.set(config.adapter, adapter);
    }
    return adapter;
  }

  /** Decided here, not in `prepare`: the URL, headers and token are final only once every interceptor has run. */
  private send(adapter: AxiosAdapter, config: InternalAxiosRequestConfig, prepared: Prepared): Promise<AxiosResponse> {
    const headers = config.headers;
    const header: unknown = headers.get('Authorization');
    const ours = this.isOurs(header, prepared);
    if ((header !== undefined && !ours) || !this.targetsAllowedOrigin(config)) {
      if (ours) headers.delete('Authorization');
      return adapter(config).catch((error: unknown) => {
        throw this.redacted(error, []);
      });
    }
    const cached = this.tokens.peekAccessToken();
    if (cached !== undefined) return this.sendWithToken(adapter, config, prepared, cached);
    return this.tokens.getAccessToken().then((token) => this.sendWithToken(adapter, config, prepared, token));
  }

  /** One request, and on a 401 from an allowed origin one re-send with a fresh token; errors leave redacted. */
  private async sendWithToken(
    adapter: AxiosAdapter,
    config: InternalAxiosRequestConfig,
    prepared: Prepared,
    token: string,
  ): Promise<AxiosResponse> {
    this.setToken(config, prepared, token);
    const callerHook = prepared.beforeRedirect;
    config.beforeRedirect = callerHook
      ? (options, responseDetails, requestDetails) => {
          this.stripOnForeignRedirect(options);
          callerHook(options, responseDetails, requestDetails);
        }
      : this.stripOnForeignRedirectHook;
    if (this.clearTextAllowed && config.proxy === undefined && resolveRequestUrl(config)?.protocol === 'http:')
      config.proxy = false;
    let response: AxiosResponse;
    try {
      response = await adapter(config);
    } catch (error) {
      if (!isAxiosError(error) || !this.mayRenewAfter(error.response, config)) throw this.redacted(error, [token]);
      return this.resend(adapter, config, prepared, token);
    }
    if (this.mayRenewAfter(response, config)) return this.resend(adapter, config, prepared, token);
    return this.leaving(response, [token]);
  }

  private resend(
    adapter: AxiosAdapter,
    config: InternalAxiosRequestConfig,
    prepared: Prepared,
    sent: string,
  ): Promise<AxiosResponse> {
    this.tokens.invalidate(sent);
    return this.observer.reauthenticate(async () => {
      const fresh = await this.tokens.getAccessToken();
      this.setToken(config, prepared, fresh);
      try {
        return this.leaving(await adapter(config), [sent, fresh]);
      } catch (error) {
        throw this.redacted(error, [sent, fresh]);
      }
    });
  }

  private setToken(config: InternalAxiosRequestConfig, prepared: Prepared, token: string): void {
    prepared.header = `Bearer ${token}`;
    config.headers.set('Authorization', prepared.header);
  }

  /** A 401 that the token can be blamed for, and a body that can be sent again. */
  private mayRenewAfter(response: AxiosResponse | undefined, config: InternalAxiosRequestConfig): boolean {
    return response?.status === 401 && !isNonReplayable(config.data) && this.isAllowed(respondingUrl(response, config));
  }

  /** A non-2xx response let through by `validateStatus` is treated like an error: it is often logged like one. */
  private leaving(response: AxiosResponse, tokens: readonly string[]): AxiosResponse {
    if (response.status < 200 || response.status >= 300) redactResponse(response, tokens);
    return response;
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

  private redacted(error: unknown, tokens: readonly string[]): unknown {
    redactAxiosError(error, tokens);
    return error;
  }
}
