import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { InternalAxiosRequestConfig } from 'axios';

/**
 * Config options whose value is a way to the wire rather than data: `transport` may be node's `http` module itself
 * (its `globalAgent` holds every socket), whatever its type.
 */
const TRANSPORT_OPTIONS = ['transport'] as const;

/**
 * The config an error hands the caller: the caller's, without what leads to a live connection. An agent
 * (`httpAgent`, `httpsAgent`) holds its sockets, free and active, and an active socket holds the head of the
 * request now on it, token included, whatever the agent renders as; a stream body (`data`) may be an incoming
 * request, holding the caller's own socket; a fetch `dispatcher` holds undici's. Every option that is an emitter
 * goes: agents, sockets, streams and dispatchers all are. The rest stays, so the config can be sent again as
 * axios-retry does: the instance's defaults fill in its agents, and a stream could not have been sent twice anyway.
 */
export function detachedConfig(config: InternalAxiosRequestConfig): InternalAxiosRequestConfig {
  const copy: Record<string, unknown> = { ...config };
  for (const key of TRANSPORT_OPTIONS) delete copy[key];
  for (const key of Object.keys(copy)) if (copy[key] instanceof EventEmitter) delete copy[key];
  const fetchOptions = copy.fetchOptions as Record<string, unknown> | undefined;
  if (fetchOptions && 'dispatcher' in fetchOptions) {
    const { dispatcher: _dispatcher, ...rest } = fetchOptions;
    copy.fetchOptions = rest;
  }
  return copy as unknown as InternalAxiosRequestConfig;
}

/**
 * The body of an error's response as the caller reads it: a `responseType: 'stream'` body is the response itself
 * (an `IncomingMessage`, holding its socket and request, and through them the agent), so the error gets a stream of
 * its own that reads the same bytes, fails as it fails, and destroyed (read or not) destroys it. The response is
 * reached from the copy only through the copy's functions. Any other body stays as it is.
 */
export function detachedBody(data: unknown): unknown {
  if (!(data instanceof Readable)) return data;
  const source = data;
  const copy = new Readable({
    read: () => source.resume(),
    destroy: (error, callback) => {
      source.destroy(error ?? undefined);
      callback(error);
    },
  });
  source.on('data', (chunk: Buffer) => {
    if (!copy.push(chunk)) source.pause();
  });
  source.pause();
  source.once('end', () => copy.push(null));
  source.once('error', (error) => copy.destroy(error));
  return copy;
}
