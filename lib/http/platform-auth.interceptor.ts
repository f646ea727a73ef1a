import {
  AxiosHeaders,
  getAdapter,
  type AxiosAdapter,
  type AxiosInstance,
  type InternalAxiosRequestConfig,
} from 'axios';
import { AuthorizedSend } from './clients/authorized-send.js';
import { CallCancel, waitSignal } from './call-cancel.js';
import { REDACTED_BEARER } from './redaction.util.js';
import { isAbsoluteUrl, resolveRequestUrl, urlText } from './request-target.util.js';
import type { BearerPolicy } from './engine/bearer.policy.js';

/** Caches keyed by request options stop growing here: a few shared values are the point, not every one-off. */
const CACHE_LIMIT = 64;
/** axios's own http adapter, resolved on first use. */
let httpAdapter: AxiosAdapter | undefined;

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
  /** The adapter installed for each adapter setting (a name, a list or a function), so the hot path builds none. */
  private readonly wrappers = new Map<unknown, AxiosAdapter>();
  /** The setting each installed adapter stands for, so that a config sent again gets its own setting back. */
  private readonly settings = new WeakMap<AxiosAdapter, unknown>();
  private readonly sender: AuthorizedSend;

  /**
   * @internal Only the composition root builds it, with the integration's `BearerPolicy` (the rules `PlatformFetch`
   * follows too); apps get it from the container.
   */
  static create(policy: BearerPolicy): PlatformAuthInterceptor {
    return new PlatformAuthInterceptor(policy);
  }

  // Private, so that the declarations (which leave out what is internal) offer no constructor to call.
  private constructor(private readonly policy: BearerPolicy) {
    this.sender = new AuthorizedSend(policy, (config) => this.targetsAllowedOrigin(config));
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
    return this.policy.isAllowed(url);
  }

  /**
   * Routes the request through the library's adapter, which wraps the one the config names (axios's `adapter`
   * option). A config sent again (the axios-retry pattern re-sends `error.config`) gets its own setting back and
   * loses the redacted header it shows.
   */
  private prepare(config: InternalAxiosRequestConfig): InternalAxiosRequestConfig {
    const headers = AxiosHeaders.from(config.headers);
    config.headers = headers;
    // axios takes a WHATWG URL only without a baseURL; as text it works with one too, and is checked as axios sends it.
    if ((config.url as unknown) instanceof URL) config.url = String(config.url);
    let setting: unknown = config.adapter;
    if (typeof setting === 'function' && this.settings.has(setting as AxiosAdapter)) {
      setting = this.settings.get(setting as AxiosAdapter);
      if (headers.get('Authorization') === REDACTED_BEARER) headers.delete('Authorization');
    }
    config.adapter = this.wrapperFor(setting);
    return config;
  }

  private wrapperFor(setting: unknown): AxiosAdapter {
    let wrapper = this.wrappers.get(setting);
    if (wrapper) return wrapper;
    const named = setting as InternalAxiosRequestConfig['adapter'];
    let resolved: AxiosAdapter | undefined;
    wrapper = (config) => {
      // A custom fetch in `env` makes the resolved adapter specific to this request.
      const adapter =
        config.env?.fetch === undefined ? (resolved ??= getAdapter(named, config)) : getAdapter(named, config);
      // axios's http adapter cancels through the cancel token; any other adapter gets a signal too (axios's fetch
      // adapter reads cancel tokens only from 1.7.6 on, a custom adapter may read only `signal`).
      // A caller's signal that is not node's own (a polyfill, another realm's) is left as it is, not replaced.
      if (
        adapter !== (httpAdapter ??= getAdapter('http', config)) &&
        config.cancelToken instanceof CallCancel &&
        (config.signal === undefined || config.signal instanceof AbortSignal)
      )
        config.signal = waitSignal(config);
      return this.sender.send(adapter, config);
    };
    this.settings.set(wrapper, setting);
    if (this.wrappers.size < CACHE_LIMIT) this.wrappers.set(setting, wrapper);
    return wrapper;
  }

  private targetsAllowedOrigin(config: InternalAxiosRequestConfig): boolean {
    const { baseURL } = config;
    const url = urlText(config.url);
    if (!baseURL || (isAbsoluteUrl(url) && config.allowAbsoluteUrls !== false)) {
      // A URL that starts with a normalised allowed origin cannot parse to another origin; anything else (other
      // case, default port, userinfo) is left to the parser.
      if (url && this.policy.isAllowedPrefix(url)) return true;
      return this.isAllowed(resolveRequestUrl(config));
    }
    // A relative URL always resolves to its base's origin (see `resolveRequestUrl`): the base decides, cached per text.
    return this.policy.isAllowedOrigin(baseURL);
  }
}
