import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ClientMetadata, type Configuration } from 'oidc-provider';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { expect } from 'vitest';
import { pooledRsaKeyPair } from '../support/pooled-test-keys.js';

/**
 * panva's oidc-provider (a certified OpenID Provider) in this process on 127.0.0.1, with in-memory storage and its
 * development login and consent pages: any login name signs in as that account. `path` puts the issuer below a path
 * (`http://127.0.0.1:port/oidc`), as some servers do.
 */
/** The provider's signing key: the test's own, so it does not fall back to its development keys. */
const SIGNING_KEY = {
  ...(await pooledRsaKeyPair()).privateKey.export({ format: 'jwk' }),
  kid: 'test-signing-key',
  use: 'sig',
  alg: 'RS256',
};

export interface OidcProviderFixture {
  readonly issuer: string;
  readonly provider: Provider;
  close(): Promise<void>;
}

/** Providers started and not yet closed: the last to close disables the package's one AsyncLocalStorage. */
let open = 0;

export async function startOidcProvider(
  clients: ClientMetadata[],
  options: { path?: string; configuration?: Configuration } = {},
): Promise<OidcProviderFixture> {
  const path = options.path ?? '';
  const mounted: { handler?: (req: IncomingMessage, res: ServerResponse) => void } = {};
  const server = createServer((req, res) => {
    const { handler } = mounted;
    if (!handler || !req.url?.startsWith(path + '/')) {
      res.writeHead(404).end();
      return;
    }
    // Mounted below `path`, as Express's `app.use(path, …)` does: the provider sees its own routes and finds its
    // mount path in `originalUrl`.
    (req as typeof req & { originalUrl?: string }).originalUrl = req.url;
    req.url = req.url.slice(path.length);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  const provider = new Provider(issuer, {
    clients,
    scopes: ['openid', 'offline_access', 'profile'],
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id, name: `User ${id}` }) }),
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    pkce: { required: () => true },
    // Fixed cookie keys: the test's own, never a production value.
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
    jwks: { keys: [SIGNING_KEY] },
    ...options.configuration,
  });
  // Its errors are the test's to assert on, not noise on the console.
  provider.on('server_error', () => undefined);
  mounted.handler = provider.callback();
  open += 1;
  return {
    issuer,
    provider,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      // oidc-provider runs each request in its module's AsyncLocalStorage and never disables it, which would leave
      // promise hooks on for the later files of a shared worker (test/support/async-hooks.guard.ts).
      open -= 1;
      if (open === 0) providerContext.disable();
    },
  };
}

/** A browser's cookies, minus paths and expiry: enough for one sign-in at the provider. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string> | undefined), cookie: this.header() },
    });
    this.store(response);
    return response;
  }
}

export interface SignInChoices {
  /** The account to sign in as. Default `alice`. */
  login?: string;
  /** On the consent page: continue (default), or abort as a user who declines. */
  consent?: 'continue' | 'abort';
}

/**
 * What a browser does from the authorize URL to the redirect back: follows the provider's redirects and posts its
 * login and consent forms with a cookie jar. Returns the URL the provider sends the browser back to (starting with
 * `redirectUri`), which may carry an error.
 */
export async function signInAtProvider(
  authorizeUrl: string,
  redirectUri: string,
  choices: SignInChoices = {},
  jar = new CookieJar(),
): Promise<string> {
  let url = authorizeUrl;
  let init: RequestInit = {};
  for (let step = 0; step < 20; step += 1) {
    if (url.startsWith(redirectUri)) return url;
    const response = await jar.fetch(url, init);
    init = {};
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url).href;
      continue;
    }
    const html = await response.text();
    expect(response.status, html.slice(0, 2000)).toBe(200);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    expect(action, html.slice(0, 2000)).toBeDefined();
    if (prompt === 'consent' && choices.consent === 'abort') {
      const abort = /href="([^"]*\/abort)"/.exec(html)?.[1];
      expect(abort, 'the consent page has an abort link').toBeDefined();
      url = new URL(abort!.replace(/&amp;/g, '&'), url).href;
      continue;
    }
    const form: Record<string, string> =
      prompt === 'login'
        ? { prompt, login: choices.login ?? 'alice', password: 'any' }
        : { prompt: prompt ?? 'consent' };
    url = new URL(action!.replace(/&amp;/g, '&'), url).href;
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    };
  }
  throw new Error('the sign-in at the provider did not end in 20 steps');
}

/** Follows an end-session URL at the provider and confirms the logout; returns where the provider sends the browser. */
export async function confirmLogoutAtProvider(endSessionUrl: string, jar = new CookieJar()): Promise<string> {
  const page = await jar.fetch(endSessionUrl);
  const html = await page.text();
  expect(page.status, html.slice(0, 2000)).toBe(200);
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  expect(action && xsrf, html.slice(0, 2000)).toBeTruthy();
  const confirmed = await jar.fetch(new URL(action!, endSessionUrl).href, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }).toString(),
  });
  expect(confirmed.status, await confirmed.clone().text()).toBeGreaterThanOrEqual(300);
  return new URL(confirmed.headers.get('location')!, endSessionUrl).href;
}
