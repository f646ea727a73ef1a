import { Readable } from 'node:stream';
import axios, { type AxiosInstance } from 'axios';
import { firstValueFrom } from 'rxjs';
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import {
  PLATFORM_AUTH_RETRY_HEADER,
  PlatformAuthInterceptor,
  PlatformFetch,
  PlatformHttpService,
  TokenProvider,
} from 'nestjs-platform-auth';
import type { PlatformFixture } from '../support/platform-fixture.js';

/** One call as every client can make it; `url` relative to the platform URL, or absolute. */
export interface Call {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** `stream`: a body that is consumed by sending it; `json`: a string, sent again as it is. */
  body?: 'stream' | 'json';
  headers?: Record<string, string>;
  /** `false`: the per-request opt-out of the retry policy, as each client spells it. */
  retry?: false;
}

/** What a call ended with, whatever the client: a status (any, 4xx too), or what it threw. */
export type Outcome = { status: number; kept: unknown } | { error: unknown };

/** A client under test: how it makes a call, bound to one fixture's integration. */
export interface ClientUnderTest {
  readonly name: string;
  /**
   * `false`: a body reaches the library as a stream whatever the caller passed (global `fetch` hands its dispatcher
   * a stream), so a request with a body is never re-sent.
   */
  readonly replaysBodies?: false;
  /** `true`: the client is a tenant's, so its fixture is the integration as the one tenant of `forTenants`. */
  readonly tenant?: true;
  /**
   * `false`: MSW's handlers cannot stand in for the platform with this client. MSW intercepts Node's http module
   * (axios) and the global `fetch` function itself: undici's own `request` passes it by, and a global `fetch` given
   * a dispatcher is answered before the dispatcher could add the token.
   */
  readonly interceptedByMsw?: false;
  bind(f: PlatformFixture): (call: Call) => Promise<Outcome>;
}

const absolute = (f: PlatformFixture, url: string) => (/^https?:/.test(url) ? url : `${f.url}${url}`);
const JSON_HEADERS = { 'content-type': 'application/json' };
const JSON_BODY = '{"to":"someone","text":"hello"}';
const streamed = () => Readable.from([Buffer.from('{"to":"someone","text":"streamed"}')]);
const webStream = () => Readable.toWeb(streamed()) as unknown as ReadableStream<Uint8Array>;
const headersOf = (call: Call) =>
  call.body || call.headers ? { ...(call.body && JSON_HEADERS), ...call.headers } : undefined;
/** A request of `fetch`'s shape: the body, and `duplex` for a stream. */
const fetchBody = (call: Call) =>
  call.body === 'stream'
    ? { body: webStream(), duplex: 'half' as const }
    : call.body === 'json'
      ? { body: JSON_BODY }
      : {};
/** A client that takes a dispatcher passes headers only: the opt-out is a header the interceptor removes. */
const dispatcherHeaders = (call: Call) => {
  const headers = headersOf(call);
  return call.retry === false ? { ...headers, [PLATFORM_AUTH_RETRY_HEADER]: 'false' } : headers;
};
const axiosData = (call: Call) => (call.body === 'stream' ? streamed() : call.body === 'json' ? JSON_BODY : undefined);

/** The status a call ended with; a call that threw fails the test. */
export function statusOf(outcome: Outcome): number {
  if ('error' in outcome) throw new Error(`the call failed: ${String(outcome.error)}`);
  return outcome.status;
}

/** The error itself, or one of its causes (global fetch wraps what its dispatcher threw in a TypeError). */
export function inChain<T>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let e = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause)
    if (e instanceof type) return e;
  return undefined;
}

async function outcome<T>(send: () => Promise<T>, status: (value: T) => number): Promise<Outcome> {
  try {
    const value = await send();
    return { status: status(value), kept: value };
  } catch (error) {
    return { error };
  }
}

function viaAxios(name: string, instance: (f: PlatformFixture) => AxiosInstance, relative: boolean): ClientUnderTest {
  return {
    name,
    bind: (f) => {
      const client = instance(f);
      return (call) =>
        outcome(
          () =>
            client.request({
              url: relative ? call.url : absolute(f, call.url),
              method: call.method ?? 'GET',
              data: axiosData(call),
              headers: headersOf(call),
              retry: call.retry,
              validateStatus: () => true,
            }),
          (response) => response.status,
        );
    },
  };
}

/** The module's `HttpService`, or a tenant's: an `HttpService` that adds the token. */
function viaHttpService(
  name: string,
  service: (f: PlatformFixture) => PlatformHttpService,
  tenant?: true,
): ClientUnderTest {
  return {
    name,
    tenant,
    bind: (f) => {
      const http = service(f);
      return (call) =>
        outcome(
          () =>
            firstValueFrom(
              http.request({
                url: call.url,
                method: call.method ?? 'GET',
                data: axiosData(call),
                headers: headersOf(call),
                retry: call.retry,
                validateStatus: () => true,
              }),
            ),
          (response) => response.status,
        );
    },
  };
}

/**
 * The module's `PlatformFetch`, or a tenant's. `bare`: a call with nothing to say beyond its URL is made as
 * `fetch(url)`, with no `init` at all, once the token is cached: the usual call, which `PlatformFetch` sends its own
 * quicker way. (A failed exchange is left for the call itself to meet; a call to another origin needs no token.)
 */
function viaPlatformFetch(
  name: string,
  client: (f: PlatformFixture) => PlatformFetch,
  options: { tenant?: true; bare?: true } = {},
): ClientUnderTest {
  return {
    name,
    tenant: options.tenant,
    bind: (f) => {
      const { fetch } = client(f);
      return (call) =>
        outcome(
          () =>
            options.bare && isBare(call)
              ? (toPlatform(f, call) ? f.moduleRef.get(TokenProvider).getAccessToken() : Promise.resolve(''))
                  .catch(() => undefined)
                  .then(() => fetch(call.url))
              : fetch(call.url, {
                  method: call.method ?? 'GET',
                  headers: headersOf(call),
                  retry: call.retry,
                  ...fetchBody(call),
                }),
          (response) => response.status,
        );
    },
  };
}

/** Whether the call is for the platform's own origin. */
const toPlatform = (f: PlatformFixture, call: Call) => new URL(absolute(f, call.url)).origin === new URL(f.url).origin;

/** A GET with no body, headers or opt-out: only its URL. */
const isBare = (call: Call) =>
  (call.method ?? 'GET') === 'GET' && !call.body && !call.headers && call.retry === undefined;

/** undici's `request` through `dispatcher`, its body drained. */
function undiciRequest(f: PlatformFixture, call: Call, dispatcher: Dispatcher) {
  return async () => {
    const response = await request(absolute(f, call.url), {
      method: call.method ?? 'GET',
      dispatcher,
      headers: dispatcherHeaders(call),
      ...(call.body === 'stream' ? { body: streamed() } : call.body === 'json' ? { body: JSON_BODY } : {}),
    });
    await response.body.dump();
    return response;
  };
}

export const CLIENTS: readonly ClientUnderTest[] = [
  viaHttpService('PlatformHttpService', (f) => f.moduleRef.get(PlatformHttpService)),
  viaAxios(
    'PlatformAuthInterceptor on a bare axios instance',
    (f) => {
      const instance = axios.create();
      f.moduleRef.get(PlatformAuthInterceptor).attach(instance);
      return instance;
    },
    false,
  ),
  viaPlatformFetch('PlatformFetch', (f) => f.moduleRef.get(PlatformFetch)),
  viaPlatformFetch('PlatformFetch, a bare call as fetch(url)', (f) => f.moduleRef.get(PlatformFetch), { bare: true }),
  {
    name: 'global fetch with PlatformFetch.dispatcher',
    replaysBodies: false,
    interceptedByMsw: false,
    bind: (f) => {
      const { dispatcher } = f.moduleRef.get(PlatformFetch);
      return (call) =>
        outcome(
          () =>
            fetch(absolute(f, call.url), {
              method: call.method ?? 'GET',
              dispatcher,
              headers: dispatcherHeaders(call),
              ...fetchBody(call),
            }),
          (response) => response.status,
        );
    },
  },
  {
    name: "undici's request with PlatformFetch.dispatcher",
    interceptedByMsw: false,
    bind: (f) => {
      const dispatcher = f.moduleRef.get(PlatformFetch).dispatcher as unknown as Parameters<typeof request>[1] extends
        { dispatcher?: infer D } | undefined
        ? D
        : never;
      return (call) => outcome(undiciRequest(f, call, dispatcher), (response) => response.statusCode);
    },
  },
  {
    name: "undici's request with PlatformFetch.interceptor in the caller's own compose",
    interceptedByMsw: false,
    bind: (f) => {
      const { interceptor } = f.moduleRef.get(PlatformFetch);
      return (call) =>
        outcome(
          async () => {
            // undici's redirect interceptor outermost, as the docs say: every hop passes through the library's.
            const agent = new Agent();
            const dispatcher = agent.compose(
              interceptor as unknown as Dispatcher.DispatcherComposeInterceptor,
              interceptors.redirect({ maxRedirections: 5 }),
            );
            try {
              return await undiciRequest(f, call, dispatcher)();
            } finally {
              await agent.close();
            }
          },
          (response) => response.statusCode,
        );
    },
  },
  viaHttpService('PlatformTenants: tenant.http', (f) => f.tenant!.http, true),
  viaPlatformFetch('PlatformTenants: tenant.fetch', (f) => f.tenant!.fetch, { tenant: true }),
];
