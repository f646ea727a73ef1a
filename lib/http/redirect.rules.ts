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
