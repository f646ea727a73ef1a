import type { PlatformAuthObserver } from '../../platform-auth.observer.js';
import type { TokenProvider } from '../../token/token.provider.js';
import type { CallGate } from '../../calls/call-gate.js';
import type { CallRetryPolicy } from '../../calls/retry.policy.js';
import type { CallAdmission } from './call-admission.js';
import { isAllowedUrl, isNonReplayable, parseUrl, startsWithOrigin } from '../request-target.util.js';

/** Origins seen by `isAllowedOrigin` stop being remembered here: a few platform origins are the point. */
const ORIGIN_CACHE_LIMIT = 64;

/**
 * The bearer rules every client of the library follows, whatever sends the bytes (fetch, an undici dispatcher):
 * which requests get the token, which token, and the one renewal a 401 earns (which 401 does, and which answer is
 * re-sent, each call's `CallPlan` decides). The client decides how to set a header and how to send again; what to
 * decide is here, once.
 */
export class BearerPolicy {
  /** Per origin text as a dispatcher gives it (`http://host:port`): whether it is allowed. */
  private readonly origins = new Map<string, boolean>();
  /** The allowed origins as a list: the hot path walks them, and a list walks without an iterator object. */
  private readonly originList: readonly string[];
  /** Allowed `http:` (loopback) origins exist: their requests must not go through an environment proxy in clear. */
  readonly clearTextAllowed: boolean;
  private lastBearer?: { readonly token: string; readonly value: string };
  /** A tenant's: every call of every client enters through it (see {@link CallAdmission}); none for an integration. */
  admission: CallAdmission | undefined = undefined;

  constructor(
    private readonly tokens: TokenProvider,
    private readonly allowedOrigins: ReadonlySet<string>,
    private readonly observer: Pick<PlatformAuthObserver, 'reauthenticate'>,
    /** The integration's rate limit and `Retry-After` holds: every client waits here before each request it sends. */
    readonly gate: CallGate,
    /** Which calls are re-sent after a transient failure, when, and with which idempotency key. */
    readonly retry: CallRetryPolicy,
  ) {
    this.originList = [...allowedOrigins];
    this.clearTextAllowed = this.originList.some((origin) => origin.startsWith('http:'));
  }

  isAllowed(url: URL | undefined): boolean {
    return isAllowedUrl(url, this.allowedOrigins);
  }

  /**
   * The same rule for absolute URL text that starts with an allowed origin as it is serialized (the usual case):
   * decided without parsing it. `false` for any other text, allowed or not: parse it and ask `isAllowed`.
   */
  isAllowedPrefix(href: string): boolean {
    return startsWithOrigin(href, this.originList);
  }

  /** The same rule for an origin given as text or a `URL`, remembered per text: dispatchers give the same few. */
  isAllowedOrigin(origin: unknown): boolean {
    if (origin instanceof URL) return this.isAllowed(origin);
    if (typeof origin !== 'string') return false;
    let allowed = this.origins.get(origin);
    if (allowed === undefined) {
      allowed = this.isAllowed(parseUrl(origin));
      if (this.origins.size < ORIGIN_CACHE_LIMIT) this.origins.set(origin, allowed);
    }
    return allowed;
  }

  /** `Authorization`'s value for `token`, made once per token: every request of a token's life sends the same. */
  bearer(token: string): string {
    if (this.lastBearer?.token !== token) this.lastBearer = { token, value: `Bearer ${token}` };
    return this.lastBearer.value;
  }

  /** The cached token when one is usable now (no promise on the hot path), else `undefined`. */
  peekToken(): string | undefined {
    return this.tokens.peekAccessToken();
  }

  token(): Promise<string> {
    return this.tokens.getAccessToken();
  }

  /** A body a client can send again: not a stream, not an async iterable. */
  isReplayable(body: unknown): boolean {
    return !isNonReplayable(body);
  }

  /**
   * Drops `sent` and re-sends once with a fresh token. Every call refused with the same token shares one renewal:
   * the provider forgets a token once and single-flights the exchange that replaces it.
   */
  renew<T extends { readonly status: number }>(sent: string, resend: (fresh: string) => Promise<T>): Promise<T> {
    this.tokens.invalidate(sent);
    return this.observer.reauthenticate(async () => resend(await this.tokens.getAccessToken()));
  }
}
