import { MAX_REQUEST_BODY_BYTES, type BodyReadResult, type EmulatorRequest } from './emulator.http.js';
import type { DelayFault, EmulatorTraffic } from './emulator.traffic.js';

/** Fetch's "null body statuses": a response with one of these has no body, as a server sends none with them. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * `request` answered as the emulator's server answers it over a socket (the same routes, verdicts, journal, faults
 * and counters: `traffic.answer`), as a WHATWG response. A dropped connection is a network error
 * (`Response.error()`); so is a hanging request once the emulator closes or the client gives up, and every request
 * after `close()`, as a closed server refuses connections. `delayFault` waits out a `delay` fault; `close()` cuts
 * the wait short. The inspector and the controls are the server's only.
 */
export async function answerFetch(
  traffic: EmulatorTraffic,
  request: Request,
  delayFault: DelayFault,
): Promise<Response> {
  const { shutdown } = traffic;
  if (shutdown.aborted) return Response.error();
  const answer = await traffic.answer(requestFromFetch(request), (ms) => untilAborted(delayFault(ms), shutdown));
  if (answer === 'hang') await abortion(AbortSignal.any([shutdown, request.signal]));
  // fetch has no final response with an informational status: the nearest a client sees is a broken exchange.
  if (shutdown.aborted || typeof answer === 'string' || answer.status < 200) return Response.error();
  const bodiless = request.method === 'HEAD' || NULL_BODY_STATUSES.has(answer.status);
  return new Response(bodiless ? null : (answer.payload ?? null), { status: answer.status, headers: answer.headers });
}

/** A WHATWG request as the emulator's routes read one from a socket: method, path and query, headers, capped body. */
function requestFromFetch(request: Request): EmulatorRequest {
  const { pathname, search } = new URL(request.url);
  return {
    method: request.method,
    url: pathname + search,
    headers: Object.fromEntries(request.headers),
    readBody: (limit = MAX_REQUEST_BODY_BYTES) => readFetchBody(request, limit),
  };
}

/** As `readBody` reads a socket's: a declared length over `limit` is refused unread, a longer stream part-way. */
async function readFetchBody(request: Request, limit: number): Promise<BodyReadResult> {
  const declared = Number(request.headers.get('content-length') ?? undefined);
  if (Number.isFinite(declared) && declared > limit) return { tooLarge: true };
  const chunks: Uint8Array[] = [];
  if (request.body) {
    const reader = (request.body as ReadableStream<Uint8Array>).getReader();
    let received = 0;
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      received += read.value.byteLength;
      if (received > limit) {
        reader.cancel().catch(() => {});
        return { tooLarge: true };
      }
      chunks.push(read.value);
    }
  }
  return { tooLarge: false, body: Buffer.concat(chunks) };
}

/** Settles when `signal` is aborted. */
function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** `work`, or a rejection as soon as `signal` is aborted. */
function untilAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, reject);
  });
}
