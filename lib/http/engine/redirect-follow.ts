import { isRedirectStatus, RedirectChain, redirectDropsBody } from './redirect.rules.js';

/** How the engine reads a client's response: its status and headers, and how one nobody reads is freed. */
export interface Answers<Res> {
  status(response: Res): number;
  /** The header `name` (lower case); `undefined` when it has none. */
  header(response: Res, name: string): unknown;
  /** Frees a response nobody reads. */
  discard(response: Res): void;
}

/**
 * What a client does for the redirects it follows itself, one hop at a time: send one hop, report what came back,
 * build the next hop's request. What to decide (which hop carries the token, how many hops, when the method and body
 * change, when a body cannot follow) is `followRedirects`', once for every such client.
 */
export interface HopClient<Req, Res> {
  readonly answers: Answers<Res>;
  /** Sends `request` to `url` once, with `token` when given and without any when not. */
  send(request: Req, url: URL, token: string | undefined): Promise<Res>;
  method(request: Req): string;
  /** Whether `request`'s body can be sent again. */
  replayable(request: Req): boolean;
  /**
   * The request of the hop from `from` to `to`: a GET without the body when `dropsBody`, without the headers that
   * belong to the first origin when `crossed` (the chain has changed origin). The token is `send`'s to add.
   */
  next(request: Req, hop: { from: URL; to: URL; dropsBody: boolean; crossed: boolean; response: Res }): Req;
  /** What the call fails with when the chain is longer than its limit (the response is discarded). */
  tooMany(response: Res, request: Req): Error;
  /** What the call fails with when a `Location` is not a URL (the response is discarded); `undefined`: it is the answer. */
  badLocation(response: Res): Error | undefined;
}

/** One send with its redirects followed: the last answer, and whether its hop had the token. */
export interface Followed<Res> {
  readonly response: Res;
  readonly carried: boolean;
}

/**
 * The rest of a send once `first`, the answer to `request` sent to `url` with the token, is in: redirects followed up
 * to `limit` hops (`0`: the redirect is the answer), the token only on the hops `RedirectChain` gives it to. A
 * redirect whose body cannot be sent again (a stream after a 307/308) is the answer.
 */
export async function followRedirects<Req, Res>(
  client: HopClient<Req, Res>,
  isAllowed: (url: URL) => boolean,
  start: { request: Req; url: URL; token: string; first: Res; limit: number },
): Promise<Followed<Res>> {
  const chain = new RedirectChain(isAllowed);
  const { answers } = client;
  const { token, limit } = start;
  let { request, url } = start;
  let response = start.first;
  let crossed = false;
  for (let hops = 0; ; hops += 1) {
    const answer = { response, carried: chain.carries };
    const status = answers.status(response);
    const location = isRedirectStatus(status) && limit > 0 ? answers.header(response, 'location') : undefined;
    if (typeof location !== 'string') return answer;
    const dropsBody = redirectDropsBody(status, client.method(request).toUpperCase());
    if (!dropsBody && !client.replayable(request)) return answer;
    let to: URL;
    try {
      to = new URL(location, url);
    } catch {
      const error = client.badLocation(response);
      if (error === undefined) return answer;
      answers.discard(response);
      throw error;
    }
    answers.discard(response);
    if (hops >= limit) throw client.tooMany(response, request);
    crossed ||= to.origin !== url.origin;
    request = client.next(request, { from: url, to, dropsBody, crossed, response });
    url = to;
    response = await client.send(request, url, chain.follow(to) ? token : undefined);
  }
}
