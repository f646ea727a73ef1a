/**
 * What the module's parts report as it happens, for telemetry to count and publish. The parts know only this
 * interface; the composition root plugs the telemetry in (or nothing), so no layer imports the telemetry folder.
 */
export interface PlatformAuthObserver extends RetryObserver {
  /**
   * A 401 from the platform made the interceptor drop the token; `resend` renews it and sends the request again.
   * Resolves or rejects as `resend` does (telemetry traces it on the caller's trace).
   */
  reauthenticate<T extends { readonly status: number }>(resend: () => Promise<T>): Promise<T>;
  credentialsChanged(outcome: CredentialChangeOutcome): void;
  certificateExpiring(daysLeft: number): void;
  storeLock(outcome: StoreLockOutcome): void;
  /** A request to the platform's API waited `waitMs` for its turn under the rate limit (0: it went at once). */
  rateLimitWait(waitMs: number): void;
  /** The rate limit went to this replica's share (the store does not answer), or back to the fleet's shared limit. */
  rateLimitMode(mode: RateLimitMode): void;
}

/** `fallback`: each replica keeps its share of the limit; `shared`: the fleet shares one limit through the store. */
export type RateLimitMode = 'shared' | 'fallback';

/** What became of one attempt to take the shared store's lock (fed by the shared token store). */
export type StoreLockOutcome = 'acquired' | 'waited' | 'timeout' | 'error';
/**
 * A credential change: files re-read and swapped, a new pair rejected (the last good one kept), rotated by call, or
 * switched to the next pair after the platform refused the current one as not registered and accepted the next.
 */
export type CredentialChangeOutcome = 'reloaded' | 'rejected' | 'rotated' | 'rotation_failed' | 'switched';

/**
 * Why a call to the platform's APIs was re-sent: 429 with `Retry-After`, 502, 503, 504, or a connection that failed
 * before any response.
 */
export type RetryReason = 'rate_limited' | 'bad_gateway' | 'unavailable' | 'gateway_timeout' | 'connection_failed';

/** What the retry policy of calls reports. */
export interface RetryObserver {
  /** A call is re-sent for `reason`; `resendCount` is this re-send's number (1 for the first re-send). */
  retried(reason: RetryReason, resendCount: number): void;
  /** The retry budget has no re-send left: failures reach callers at once until it has. Once per such period. */
  retryBudgetExhausted(): void;
}
