/*
 * axios's fetch adapter follows redirects inside fetch and drops the `Response`, so the URL that answered is lost;
 * a 401 from a foreign redirect target would look like the platform's. The adapter is given a fetch that records
 * `Response.url` per `Request` (weakly, so nothing outlives the request). One recorder per underlying fetch: axios
 * caches an adapter per fetch function, so a new function per request would grow that cache for ever.
 */

type Fetch = typeof fetch;

const respondingUrls = new WeakMap<Request, string>();
const recorders = new WeakMap<Fetch, Fetch>();

function recorder(underlying: () => Fetch): Fetch {
  return async (input, init) => {
    const response = await underlying()(input, init);
    if (input instanceof Request) respondingUrls.set(input, response.url);
    return response;
  };
}

/** Looks the global fetch up per call, so a fetch patched later (a test double, an APM hook) is still the one used. */
const recordingGlobalFetch = recorder(() => globalThis.fetch);

/** A fetch that behaves like `underlying` (default: the global fetch) and records where each response came from. */
export function recordingFetch(underlying?: Fetch): Fetch {
  if (underlying === undefined) return recordingGlobalFetch;
  let wrapped = recorders.get(underlying);
  if (!wrapped) {
    wrapped = recorder(() => underlying);
    recorders.set(underlying, wrapped);
  }
  return wrapped;
}

/** The URL of the response to `request`, when a recording fetch sent it. */
export function fetchRespondingUrl(request: Request): string | undefined {
  return respondingUrls.get(request);
}
