import { OPEN_GATE } from '../../calls/call-gate.js';
import { isRedirectStatus, redirectDroppedHeaders } from '../engine/redirect.rules.js';
import { parseUrl, resolveRequestText } from '../request-target.util.js';
import type { BearerPolicy } from '../engine/bearer.policy.js';
import { admitted } from '../engine/call-admission.js';
import { asksPlan } from '../engine/call-plan.js';
import { discardBody, FETCH_ANSWERS, FetchCall } from './fetch-call.js';
import { hasAuthorization, withAuthorization, withoutHeaders } from './fetch-headers.util.js';
import { continueCall, runCall } from '../engine/policy-call.js';
import { followRedirects, type Followed, type HopClient } from '../engine/redirect-follow.js';
import { newPlatformAgent } from './undici-agent.js';
import { bearerInterceptor, type PlatformDispatcher, type PlatformInterceptor } from './undici.interceptor.js';

/** Fetch's own limit (WHATWG fetch, "HTTP-redirect fetch" step 5). */
const MAX_REDIRECTS = 20;
/** The init of a call made without one: `follow` sends those with an init made once per token. */
const NO_INIT: PlatformFetchInit = Object.freeze({});

/** `fetch`'s `init`, and the retry policy's per-request switch. */
export interface PlatformFetchInit extends RequestInit {
  /**
   * `false`: this request is never re-sent after a transient failure, whatever the integration's `retry` policy
   * says (the one re-send after a 401 still happens).
   */
  retry?: boolean;
}

/**
 * `fetch` for the platform: relative URLs resolve against the platform URL, requests to allowed origins carry the
 * integration's bearer token, and a 401 from one is re-sent once with a fresh token (one renewal however many calls
 * get it), unless the body is a stream. A caller's own `Authorization` is left alone. Redirects are followed here,
 * one hop at a time, so that the token goes to no other origin.
 *
 * For a client that takes a dispatcher (global `fetch`'s `dispatcher` option, undici's `request`, openapi-fetch,
 * ky) use `dispatcher`, or compose `interceptor` into your own undici dispatcher: the same rules, applied per request.
 *
 * Inject it (`PlatformFetch`, or `@InjectPlatformFetch(name)` for a named integration); the module builds it.
 */
export class PlatformFetch {
  /**
   * An interceptor for undici 7's `Dispatcher.compose`: `new Agent().compose(platformFetch.interceptor)`. Compose
   * undici's `redirect` interceptor after it (outermost), so every hop passes through this one.
   */
  readonly interceptor: PlatformInterceptor;
  // True private fields: the policy reaches the token provider, which nobody inspecting this object should.
  readonly #policy: BearerPolicy;
  readonly #baseUrl: string;
  /** `follow`, bound once: each call hands it to its `FetchCall`. */
  readonly #follow = (start: URL | string, init: RequestInit, token: string): Promise<Followed<Response>> =>
    this.follow(start, init, token);
  /**
   * Whether a call with URL text and no init may take `quickFetch`: no rate limit (the gate is open) and no
   * idempotency key for GET (the integration does not list GET in `idempotencyKey.methods`). Both are fixed.
   */
  readonly #quick: boolean;
  #dispatcher?: PlatformDispatcher;
  /** `bareInit`'s last answer, for the token it was made for. */
  #bare?: { readonly token: string; readonly init: RequestInit };

  /** @internal Only the composition root builds it; apps get it from the container. */
  static create(baseUrl: string, policy: BearerPolicy): PlatformFetch {
    return new PlatformFetch(baseUrl, policy);
  }

  // Private, so that the declarations (which leave out what is internal) offer no constructor to call.
  private constructor(baseUrl: string, policy: BearerPolicy) {
    this.#baseUrl = baseUrl;
    this.#policy = policy;
    this.#quick = policy.gate === OPEN_GATE && policy.retry.keyHeader('GET') === undefined;
    this.interceptor = bearerInterceptor(policy);
  }

  /**
   * An undici `Agent` that follows the same rules as `interceptor`, made on first use: `fetch(url, { dispatcher })`,
   * undici's `request(url, { dispatcher })`. It applies them in its own `dispatch` rather than through `compose`,
   * which would convert every request's handler and headers. Needs the optional peer `undici` 7; the module closes
   * it at shutdown.
   */
  get dispatcher(): PlatformDispatcher {
    // Synchronous, for an option object built in place; a property cannot wait for import().
    this.#dispatcher ??= newPlatformAgent(this.#policy);
    return this.#dispatcher;
  }

  /**
   * Like the global `fetch`; a relative URL is resolved against the platform URL. A transient failure is re-sent as
   * the integration's `retry` policy says, unless `init.retry` is `false`.
   */
  fetch = (input: string | URL | Request, init?: PlatformFetchInit): Promise<Response> => {
    const admission = this.#policy.admission;
    if (admission === undefined) return this.#fetch(input, init);
    return admitted(admission, () => this.#fetch(input, init));
  };

  readonly #fetch = (input: string | URL | Request, init?: PlatformFetchInit): Promise<Response> => {
    if (init === undefined && this.#quick && typeof input === 'string') {
      const quick = this.quickFetch(input);
      if (quick !== undefined) return quick;
    }
    if (input instanceof Request) return this.fetchRequest(input, init);
    const policy = this.#policy;
    const text = typeof input === 'string' ? resolveRequestText({ url: input, baseURL: this.#baseUrl }) : undefined;
    // Text that starts with an allowed origin is sent as it is: parsing it here would cost more than fetch itself.
    const allowedText = text !== undefined && policy.isAllowedPrefix(text);
    if (allowedText && !hasAuthorization(init?.headers)) return this.withToken(text, init ?? NO_INIT);
    const url = text === undefined ? (input as URL) : parseUrl(text);
    if (url === undefined) return Promise.reject(new TypeError(`PlatformFetch: not a URL: ${input as string}`));
    if (hasAuthorization(init?.headers) || !(allowedText || policy.isAllowed(url))) return fetch(url, init);
    return this.withToken(url, init ?? NO_INIT);
  };

  /** @internal Closes the dispatcher's sockets; the composition root calls it at shutdown. */
  async close(): Promise<void> {
    await (this.#dispatcher as { close?: () => Promise<void> } | undefined)?.close?.();
  }

  /**
   * A `Request` is taken apart into its URL and init; `init` overrides as it does for `fetch`. Its body is a stream
   * by then, whatever it was made from, so a 401 to a request with a body is not re-sent: pass the body in `init`.
   */
  private fetchRequest(request: Request, init: PlatformFetchInit | undefined): Promise<Response> {
    const { method, headers, body, signal, redirect } = request;
    const merged: PlatformFetchInit = { method, headers, signal, redirect };
    // Clients that wrap fetch (ky) pass an init with keys present but undefined: those do not override the Request.
    for (const [key, value] of Object.entries(init ?? {}) as [string, unknown][])
      if (value !== undefined) Object.assign(merged, { [key]: value });
    if (body !== null && init?.body === undefined) Object.assign(merged, { body, duplex: 'half' });
    return this.#fetch(request.url, merged);
  }

  /**
   * The usual call, URL text and no `init`, with a cached token and no rate limit: its first send is made here and a
   * plain answer returned in one promise step. Anything else a first answer asks for (a redirect, a 401, a retriable
   * status, a failure) goes on as `withToken`'s call would. `undefined` when the call is not one of these: the token
   * must be awaited, or the URL is not one the token may go to. Only for an integration that allows it (`#quick`).
   */
  private quickFetch(input: string): Promise<Response> | undefined {
    const policy = this.#policy;
    let text = input;
    if (!policy.isAllowedPrefix(text)) {
      // A relative URL may resolve to an allowed origin; any other text is for the general way to decide.
      text = resolveRequestText({ url: input, baseURL: this.#baseUrl });
      if (text === input || !policy.isAllowedPrefix(text)) return undefined;
    }
    const token = policy.peekToken();
    if (token === undefined) return undefined;
    policy.retry.countCall();
    const bare = this.#bare;
    const sending = fetch(text, bare?.token === token ? bare.init : this.bareInit(token));
    return sending.then(
      (response) => (isPlainAnswer(response.status) ? response : this.continueQuick(text, token, sending)),
      () => this.continueQuick(text, token, sending),
    );
  }

  /** The rest of a `quickFetch` call from its first send, `sending` (settled): as `follow` and `runCall` go on. */
  private continueQuick(text: string, token: string, sending: Promise<Response>): Promise<Response> {
    const call = new FetchCall(this.#policy, text, NO_INIT, this.#follow);
    const firstSend = sending.then((response) =>
      isRedirectStatus(response.status) ? this.redirected(text, NO_INIT, token, response) : { response, carried: true },
    );
    return continueCall(this.#policy, call, token, firstSend);
  }

  private withToken(url: URL | string, init: PlatformFetchInit): Promise<Response> {
    const policy = this.#policy;
    policy.retry.countCall();
    const call = new FetchCall(policy, url, init, this.#follow);
    const cached = policy.peekToken();
    if (cached !== undefined) return runCall(policy, call, cached);
    return policy.token().then((token) => runCall(policy, call, token));
  }

  /**
   * Sends with the token to allowed origins only, and follows redirects as fetch would (303, and 301/302 after a
   * POST, become a GET without a body) unless `init.redirect` says otherwise. A 307/308 cannot re-send a stream:
   * that redirect response is returned as it is. `start` is allowed: `fetch` sends only those here.
   */
  private follow(start: URL | string, init: RequestInit, token: string): Promise<Followed<Response>> {
    const sent =
      init === NO_INIT
        ? this.bareInit(token)
        : {
            ...init,
            headers: withAuthorization(init.headers, this.#policy.bearer(token)),
            redirect: 'manual' as const,
          };
    return fetch(start, sent).then((response) =>
      isRedirectStatus(response.status) ? this.redirected(start, init, token, response) : { response, carried: true },
    );
  }

  /**
   * The init of a call made without one, for `token`: built once per token, not per call (fetch reads an init and
   * never changes it, and both objects are frozen), so the usual call allocates no header record, string or copy.
   */
  private bareInit(token: string): RequestInit {
    const last = this.#bare;
    if (last?.token === token) return last.init;
    const headers = Object.freeze({ authorization: this.#policy.bearer(token) });
    const init = Object.freeze({ headers, redirect: 'manual' as const });
    this.#bare = { token, init };
    return init;
  }

  /** The rest of `follow` once `first`, the answer to `start`, is a redirect: as `followRedirects` follows them. */
  private redirected(
    start: URL | string,
    init: RequestInit,
    token: string,
    first: Response,
  ): Promise<Followed<Response>> {
    const mode = init.redirect ?? 'follow';
    const url = typeof start === 'string' ? new URL(start) : start;
    if (mode === 'error' && first.headers.has('location')) {
      discardBody(first);
      return Promise.reject(
        new TypeError(`PlatformFetch: ${url.origin} redirected a request made with redirect: 'error'`),
      );
    }
    const policy = this.#policy;
    const limit = mode === 'manual' ? 0 : MAX_REDIRECTS;
    return followRedirects(new FetchHopClient(policy), (next) => policy.isAllowed(next), {
      request: init,
      url,
      token,
      first,
      limit,
    });
  }
}

/** `fetch` as `followRedirects` sees it: each hop a `fetch` of its own with `redirect: 'manual'`. */
class FetchHopClient implements HopClient<RequestInit, Response> {
  readonly answers = FETCH_ANSWERS;

  constructor(private readonly policy: BearerPolicy) {}

  send(request: RequestInit, url: URL, token: string | undefined): Promise<Response> {
    const headers =
      token === undefined ? request.headers : withAuthorization(request.headers, this.policy.bearer(token));
    return fetch(url, { ...request, headers, redirect: 'manual' });
  }

  method(request: RequestInit): string {
    return request.method ?? 'GET';
  }

  replayable(request: RequestInit): boolean {
    return this.policy.isReplayable(request.body);
  }

  /** As fetch's own redirects: a dropped body takes its `Content-*` headers, another origin gets no cookies. */
  next(request: RequestInit, hop: { dropsBody: boolean; crossed: boolean }): RequestInit {
    const next = hop.dropsBody ? { ...request, method: 'GET', body: undefined } : request;
    return { ...next, headers: withoutHeaders(next.headers, redirectDroppedHeaders(hop)) };
  }

  tooMany(): TypeError {
    return new TypeError(`PlatformFetch: more than ${MAX_REDIRECTS} redirects`);
  }

  /** What fetch fails with for a `Location` that is not a URL. */
  badLocation(response: Response): TypeError {
    return new TypeError(`PlatformFetch: a redirect's Location is not a URL (HTTP ${response.status})`);
  }
}

/** An answer the policy has nothing to do with: not a redirect to follow, a 401 to renew after, or a retriable status. */
function isPlainAnswer(status: number): boolean {
  return !isRedirectStatus(status) && !asksPlan(status);
}
