import { Readable } from 'node:stream';
import axios, { type AxiosInstance } from 'axios';
import { firstValueFrom } from 'rxjs';
import { request } from 'undici';
import { PlatformAuthInterceptor, PlatformFetch, PlatformHttpService } from 'nestjs-platform-auth';
import type { PlatformFixture } from '../support/platform-fixture.js';

/** One call as every client can make it; `url` relative to the platform URL, or absolute. */
export interface Call {
  url: string;
  method?: 'GET' | 'POST';
  /** `stream`: a body that is consumed by sending it. */
  body?: 'stream';
}

/** What a call ended with, whatever the client: a status (any, 4xx too), or what it threw. */
export type Outcome = { status: number; kept: unknown } | { error: unknown };

/** A client under test: how it makes a call, bound to one fixture's integration. */
export interface ClientUnderTest {
  readonly name: string;
  bind(f: PlatformFixture): (call: Call) => Promise<Outcome>;
}

const absolute = (f: PlatformFixture, url: string) => (/^https?:/.test(url) ? url : `${f.platform.url}${url}`);
const JSON_HEADERS = { 'content-type': 'application/json' };
const streamed = () => Readable.from([Buffer.from('{"to":"someone","text":"streamed"}')]);
const webStream = () => Readable.toWeb(streamed()) as unknown as ReadableStream<Uint8Array>;

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
              data: call.body === 'stream' ? streamed() : undefined,
              headers: call.body ? JSON_HEADERS : undefined,
              validateStatus: () => true,
            }),
          (response) => response.status,
        );
    },
  };
}

export const CLIENTS: readonly ClientUnderTest[] = [
  {
    name: 'PlatformHttpService',
    bind: (f) => {
      const http = f.moduleRef.get(PlatformHttpService);
      return (call) =>
        outcome(
          () =>
            firstValueFrom(
              http.request({
                url: call.url,
                method: call.method ?? 'GET',
                data: call.body === 'stream' ? streamed() : undefined,
                headers: call.body ? JSON_HEADERS : undefined,
                validateStatus: () => true,
              }),
            ),
          (response) => response.status,
        );
    },
  },
  viaAxios(
    'PlatformAuthInterceptor on a bare axios instance',
    (f) => {
      const instance = axios.create();
      f.moduleRef.get(PlatformAuthInterceptor).attach(instance);
      return instance;
    },
    false,
  ),
  {
    name: 'PlatformFetch',
    bind: (f) => {
      const { fetch } = f.moduleRef.get(PlatformFetch);
      return (call) =>
        outcome(
          () =>
            fetch(call.url, {
              method: call.method ?? 'GET',
              ...(call.body === 'stream' ? { body: webStream(), duplex: 'half', headers: JSON_HEADERS } : {}),
            }),
          (response) => response.status,
        );
    },
  },
  {
    name: 'global fetch with PlatformFetch.dispatcher',
    bind: (f) => {
      const { dispatcher } = f.moduleRef.get(PlatformFetch);
      return (call) =>
        outcome(
          () =>
            fetch(absolute(f, call.url), {
              method: call.method ?? 'GET',
              dispatcher,
              ...(call.body === 'stream' ? { body: webStream(), duplex: 'half', headers: JSON_HEADERS } : {}),
            }),
          (response) => response.status,
        );
    },
  },
  {
    name: "undici's request with PlatformFetch.dispatcher",
    bind: (f) => {
      const dispatcher = f.moduleRef.get(PlatformFetch).dispatcher as unknown as Parameters<typeof request>[1] extends
        { dispatcher?: infer D } | undefined
        ? D
        : never;
      return (call) =>
        outcome(
          async () => {
            const response = await request(absolute(f, call.url), {
              method: call.method ?? 'GET',
              dispatcher,
              ...(call.body === 'stream' ? { body: streamed(), headers: JSON_HEADERS } : {}),
            });
            await response.body.dump();
            return response;
          },
          (response) => response.statusCode,
        );
    },
  },
];
