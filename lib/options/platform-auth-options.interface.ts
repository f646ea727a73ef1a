import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { CallRetryOptions, IdempotencyKeyOptions } from './call-options.interface.js';
import type { ExchangeOptions } from './exchange-options.interface.js';
import type { KeySource } from './key-source.interface.js';
import type { RateLimitOptions } from './rate-limit-options.interface.js';
import type { TokenStore } from './token-store.interface.js';
import type { TokenStoreOptions } from './token-store-options.interface.js';

export type { KeySource, PlatformAuthSigner } from './key-source.interface.js';
export type { ExchangeOptions } from './exchange-options.interface.js';
export type { CallRetryOptions, IdempotencyKeyOptions } from './call-options.interface.js';
export type { RateLimitOptions } from './rate-limit-options.interface.js';

/**
 * One integration's options: the platform, the key pair (`key`, and `next` during a rotation), the token exchange
 * (`exchange`), the shared store (`tokenStore`). A name of an earlier shape (`privateKeyPath`) is a configuration
 * error that names the option it moved to (`key.privateKeyPath`).
 */
export interface PlatformAuthOptions {
  /** `https://{platform_domain}`; `http:` is accepted only for loopback hosts. */
  baseUrl: string;
  /** The system integration's machineId; becomes the assertion's `sub`. */
  machineId: string;
  /** The key that signs assertions, and its registered certificate. */
  key?: KeySource;
  /**
   * The next pair, for a certificate rotation without a failed call: a key and its certificate prepared beside the
   * current pair (`platform-auth keygen --next`). Checked at start-up like the current pair, and must differ from
   * it. Assertions carry the current pair until the platform refuses it as not registered (the portal now holds the
   * next certificate); the same exchange then tries the next pair at once, and once that is accepted it is the
   * current pair for the process. Without its own `passphrase`, an encrypted next key uses `key.passphrase`.
   */
  next?: KeySource;
  /** Certificate thumbprint; required only without a certificate. Case, colons and spaces are ignored. */
  thumbprint?: string;
  /** Hash used for the thumbprint (`iss`). Default `sha1`, the portal's form. */
  thumbprintAlgorithm?: 'sha1' | 'sha256';
  /** The assertion's `aud`. Default: the platform domain, `new URL(baseUrl).host`. */
  audience?: string;
  /**
   * The token exchange: retry policy, timeout, endpoint path, encoding, response bound, failure back-off. Its retry
   * policy is `exchange.retry`; the top-level `retry` is the policy of calls to the platform's APIs.
   */
  exchange?: ExchangeOptions;
  /**
   * Re-sends of calls to the platform's APIs after a transient failure (429/503 with `Retry-After`, 502/503/504, a
   * connection that failed before any response), with back-off, a per-call limit and a retry budget per
   * integration. On by default; `retry: false` here turns it off for the integration, and on one request (axios
   * config, `PlatformFetch.fetch` init) for that request. `retry.maxTotalMs`, a setting of the exchange's policy
   * only, is refused here.
   */
  retry?: CallRetryOptions | boolean;
  /**
   * An idempotency key on calls of the listed methods, kept on every re-send. Off unless set; `true` or `{}` turns it
   * on with the defaults. A caller's own key in the header makes a POST or PATCH re-sendable either way.
   */
  idempotencyKey?: IdempotencyKeyOptions | boolean;
  /** Renew this long before expiry. Default 60; never more than half the token's lifetime. */
  refreshBeforeExpirySeconds?: number;
  /** Assertion lifetime. Default 300; above 300 is a configuration error. */
  assertionLifetimeSeconds?: number;
  /** Origins besides `baseUrl`'s that may receive the token. Default none. */
  allowedOrigins?: string[];
  /** Correct assertion times by the offset measured from the platform's `Date` header. Default false. */
  correctClockSkew?: boolean;
  /**
   * `iat` and `nbf` are back-dated by this many seconds, so a platform whose clock is up to this far behind (or
   * ahead: `exp` still lies `assertionLifetimeSeconds - margin` ahead) accepts the assertion. Default 60, at most 120;
   * 0 is strict.
   */
  clockMarginSeconds?: number;
  /**
   * Acquire a token while the application boots (`onApplicationBootstrap`), so a wrong machineId or an unreachable
   * platform shows at deploy time: `'warn'` (default) logs why no token could be had, hint included, and starts
   * anyway; `'fail'` rejects `app.init()`/`app.listen()` with the typed error; `'off'` waits for the first request.
   * The boot waits for at most one exchange (`exchange.retry.maxTotalMs`); with `tokenStore`, replicas share it.
   * Tenants of `forTenants` are built on first use and do not run it.
   */
  startupCheck?: 'off' | 'warn' | 'fail';
  /**
   * Re-read the `privateKeyPath` / `certificatePath` files of `key` and `next` this often and switch to changed files once they pass every
   * start-up check (the last good pair is kept otherwise). Default: off. At least 1,000 ms.
   */
  credentialsReloadIntervalMs?: number;
  /**
   * Shares one token across the replicas of a service: a Redis the module connects to, a Redis client of yours, or a
   * `TokenStore` of yours for another engine; needs `encryptionKey`. A `TokenStore` given here directly is read as
   * `{ instance }`. Default: none, each process exchanges.
   */
  tokenStore?: TokenStoreOptions | TokenStore;
  /**
   * A rate limit on calls to the platform's APIs: every request waits its turn (bounded by `maxWaitMs`, then
   * `RateLimitWaitError`). With `tokenStore` on Redis (`url` or `client`) the replicas share it, and when Redis does
   * not answer each keeps its share. Default: none.
   */
  rateLimit?: RateLimitOptions;
  /** Time source; tests inject one. Default: the system clock. */
  clock?: Clock;
  /**
   * Where the module's warnings go (start-up configuration warnings, renewal failures, clock skew). Called with the
   * message only, so a `Logger` keeps its own context. Default: Nest's `Logger` with context `PlatformAuth`.
   */
  logger?: LoggerService;
}

/** How the thumbprint (`iss`) is computed (see `thumbprintAlgorithm`). */
export type ThumbprintAlgorithm = NonNullable<PlatformAuthOptions['thumbprintAlgorithm']>;
