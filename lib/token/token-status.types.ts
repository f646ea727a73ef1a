import type { TokenExchangeError } from '../platform-auth.errors.js';

/**
 * A snapshot of token acquisition, safe to log and to serve: no token, no assertion, no key material, no
 * machineId. Built synchronously from fields the provider keeps anyway.
 */
export interface TokenProviderStatus {
  /** The integration's name: `default`, or the `name` given to `forRoot`. */
  readonly integration: string;
  /**
   * - `valid`: a usable token is cached.
   * - `renewing`: an exchange is in flight (with or without a usable token; see `token`).
   * - `none`: no usable token and nothing in flight (before the first call, after `invalidate()`, or expired).
   * - `backoff`: no usable token, and the last exchange failed: callers fail fast until `nextAttemptAt`.
   * - `shutdown`: the module was destroyed.
   */
  readonly state: 'valid' | 'renewing' | 'none' | 'backoff' | 'shutdown';
  /** The cached token's timing, when one is cached (even if due for renewal). */
  readonly token?: {
    readonly expiresAt: Date;
    readonly expiresInMs: number;
    readonly ageMs: number;
    readonly usable: boolean;
  };
  /** The last exchange, once one ended. */
  readonly lastExchange?: {
    /** When it ended. */
    readonly at: Date;
    readonly ok: boolean;
    readonly reason?: TokenExchangeError['reason'];
    /** HTTP status of the last attempt, when there was a response. */
    readonly status?: number;
    /** The OAuth `error` code the platform answered, such as `invalid_client`. */
    readonly oauthError?: string;
    readonly attempts: number;
    readonly durationMs: number;
  };
  readonly consecutiveFailures: number;
  /** While in back-off: when the next exchange may start. */
  readonly nextAttemptAt?: Date;
  /** Present when a certificate (not only a thumbprint) is configured. */
  readonly certificate?: {
    readonly notAfter: Date;
    /** Whole days, rounded down; negative once expired. */
    readonly daysLeft: number;
    readonly expired: boolean;
  };
  readonly credentials: {
    /** The thumbprint assertions carry now (`iss`); it changes with a reload or a rotation. */
    readonly thumbprint: string;
    readonly activatedAt: Date;
    /** Where file-based credentials stand (`credentialsReloadIntervalMs`). */
    readonly reload: {
      /** `off`: not configured; `watching`: the files in use are the newest valid ones; `rejected`: see `problems`. */
      readonly state: 'off' | 'watching' | 'rejected';
      readonly intervalMs?: number;
      readonly lastCheckAt?: Date;
      /** When changed files were last put in use. */
      readonly lastReloadAt?: Date;
      /** Why the newest files were refused; the last good pair stays in use. Settings and paths only, never content. */
      readonly problems?: readonly string[];
    };
    /** The next pair (the `next` options or files), tried when the platform refuses the current one as not registered. */
    readonly next?: { readonly thumbprint: string };
    /**
     * Set when this process switched to the next pair (the platform refused the configured one as not registered
     * and accepted the next), until the files say the same: update them, the next pair becomes the current pair.
     */
    readonly switched?: { readonly at: Date; readonly from: string; readonly to: string };
  };
  /**
   * The shared token store's view, when one is configured.
   * - `shared`: the store answers and its entries are readable: replicas share one token.
   * - `degraded`: the store cannot be used right now; this replica exchanges on its own (no request fails), and
   *   `problem` says why.
   * - `closed`: the module was shut down.
   */
  readonly sharedStore?: {
    readonly state: 'shared' | 'degraded' | 'closed';
    /** How the module reaches the store; `provided` for a store on the application's client or `TokenStore`. */
    readonly mode: 'standalone' | 'cluster' | 'sentinel' | 'provided';
    /**
     * While degraded: the first word of Redis's error reply (`WRONGPASS`, `NOPERM`, `MOVED`, `CLUSTERDOWN`,
     * `READONLY`, …), a TLS or connection code (`SELF_SIGNED_CERT_IN_CHAIN`, `ECONNREFUSED`, …) or a client error's
     * name; `timeout` (no answer within `operationTimeoutMs`); `lock-held` (no replica shared a token while the lock
     * was held past its lease); `unreadable-entry` (a stored entry does not open with this replica's keys, or is
     * oversized). Never a URL or a password.
     */
    readonly problem?: string;
    /** While degraded: since when. */
    readonly since?: Date;
  };
  /**
   * The rate limit of calls to the platform's APIs, when one is configured.
   * - `local`: kept by this process alone (no shared store on Redis).
   * - `shared`: the replicas share one limit through the store.
   * - `fallback`: the store does not answer; this replica keeps its share of the limit (`requestsPerSecond` is that
   *   share: the limit divided by `replicasSeen`), and `problem` says why, until the store answers again.
   */
  readonly rateLimit?: {
    /** Where the limit is kept now: this process alone, the fleet's bucket in the store, or this replica's share. */
    readonly mode: 'local' | 'shared' | 'fallback';
    /** The limit this process applies now: the configured one, or its share of it in `fallback`. */
    readonly requestsPerSecond: number;
    /** With a shared store: the replicas last seen through it, this one included. */
    readonly replicasSeen?: number;
    /** Requests waiting for their turn in this process. */
    readonly waiting: number;
    /** In `fallback`: the store's problem, as `sharedStore.problem` names it. */
    readonly problem?: string;
    /** In `fallback`: since when. */
    readonly since?: Date;
  };
}

// The parts each field comes from, by the names those parts use.
export type TokenState = TokenProviderStatus['state'];
export type LastExchangeStatus = NonNullable<TokenProviderStatus['lastExchange']>;
export type SharedStoreStatus = NonNullable<TokenProviderStatus['sharedStore']>;
export type RateLimitStatus = NonNullable<TokenProviderStatus['rateLimit']>;
