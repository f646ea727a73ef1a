import * as oauth from 'oauth4webapi';
import { readBodyUpTo } from '../util/body-read.util.js';
import { USER_RESPONSE_LIMIT_BYTES } from './platform-user-auth.constants.js';

/** An answer larger than the limit: its body was not read past it. */
export class ResponseTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`the answer is larger than ${limitBytes / 1024} KiB`);
    this.name = 'ResponseTooLargeError';
  }
}

/** Statuses whose `Response` may not have a body (Fetch standard). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch`, with the body read here and refused once it passes `USER_RESPONSE_LIMIT_BYTES`: an answer announcing a
 * larger `Content-Length` is not read at all, and one without it is cancelled (closing the connection) as soon as it
 * goes over, so a hostile or broken server costs at most the limit in memory. The answer is handed on as a new `Response`
 * holding the bytes read, which oauth4webapi then parses and checks as usual.
 */
function boundedFetch(): typeof fetch {
  const limitBytes = USER_RESPONSE_LIMIT_BYTES;
  return async (input, init) => {
    const response = await fetch(input, init);
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > limitBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new ResponseTooLargeError(limitBytes);
    }
    const chunks = await readBodyUpTo(response.body as ReadableStream<Uint8Array> | null, limitBytes);
    if (!chunks) throw new ResponseTooLargeError(limitBytes);
    const body = NULL_BODY_STATUSES.has(response.status) ? null : Buffer.concat(chunks);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** What every request to the authorization server is sent with: a timeout, the size limit, and http: on loopback. */
export function requestOptions(
  timeoutMs: number,
  insecure: boolean,
): { signal: AbortSignal; [oauth.customFetch]: typeof fetch; [oauth.allowInsecureRequests]: boolean } {
  return {
    signal: AbortSignal.timeout(timeoutMs),
    [oauth.customFetch]: boundedFetch(),
    [oauth.allowInsecureRequests]: insecure,
  };
}
