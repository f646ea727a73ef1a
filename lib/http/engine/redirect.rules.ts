/** The redirects a client follows itself, one hop at a time, so that the token goes to no other origin. */
export function isRedirectStatus(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/**
 * Whether following this redirect turns the request into a GET without its body (WHATWG fetch, "HTTP-redirect
 * fetch" step 12; follow-redirects does the same): a 303 for anything but GET and HEAD, a 301 or 302 after a POST.
 */
export function redirectDropsBody(status: number, method: string): boolean {
  return status === 303
    ? method !== 'GET' && method !== 'HEAD'
    : (status === 301 || status === 302) && method === 'POST';
}

/** The headers of a body: a redirect that drops the body drops them with it (WHATWG fetch; follow-redirects). */
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
/** What belongs to the first origin: fetch and follow-redirects drop these once the chain changes origin. */
const ORIGIN_HEADERS = ['cookie', 'proxy-authorization', 'host'];

/**
 * The headers (lower case) the next hop of a redirect goes without, for every client that follows redirects itself:
 * the body's when the redirect drops the body, the first origin's once the chain has `crossed` to another origin.
 * The token is not among them: which hop carries it is `RedirectChain`'s to say.
 */
export function redirectDroppedHeaders(hop: { readonly dropsBody: boolean; readonly crossed: boolean }): string[] {
  return [...(hop.dropsBody ? BODY_HEADERS : []), ...(hop.crossed ? ORIGIN_HEADERS : [])];
}

/**
 * Which hops of one redirect chain carry the token, for every client: a hop does only while every hop of the chain
 * so far, itself included, is at an allowed origin with no userinfo. Once the chain has left, no later hop carries
 * it, whatever its origin: a foreign origin must not be able to steer a token-bearing request to a platform path of
 * its choosing, and a 401 after that is not the token's fault.
 */
export class RedirectChain {
  #carries: boolean;

  /** `carries`: whether the chain's first hop carries the token. */
  constructor(
    private readonly isAllowed: (url: URL) => boolean,
    carries = true,
  ) {
    this.#carries = carries;
  }

  /** Whether the hop being sent now carries the token. */
  get carries(): boolean {
    return this.#carries;
  }

  /** Moves the chain on to `next`: whether that hop carries the token. After `false`, never `true` again. */
  follow(next: URL): boolean {
    this.#carries &&= this.isAllowed(next);
    return this.#carries;
  }
}

/**
 * For a client that follows redirects itself and asks a dispatcher for each hop as a request of its own (global
 * `fetch`, undici's redirect interceptor): the dispatcher cannot tell such a hop from a new call, so it must not be
 * asked for one that would reach an allowed origin after the chain left. Whether the redirect to `location`, answered
 * by `from`, is one: its target is an allowed origin, and `from` is not (`fromAllowed`), or the target has userinfo.
 */
export function mustNotFollow(
  location: string,
  from: URL,
  fromAllowed: boolean,
  allowedOrigin: (origin: string) => boolean,
): boolean {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    return false;
  }
  return allowedOrigin(next.origin) && (!fromAllowed || next.username !== '' || next.password !== '');
}
