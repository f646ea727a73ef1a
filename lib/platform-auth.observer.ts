import type { TokenExchangeError } from './platform-auth.errors.js';

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

/**
 * What the observer's reports become when telemetry publishes them on `PLATFORM_AUTH_DIAGNOSTICS_CHANNEL`, each with
 * the integration it happened to. Never a token, key, PEM or machineId. A part built on this package may publish
 * events of its own there, each with an `event` name of its own.
 */
export type PlatformAuthDiagnosticsEvent = { readonly integration: string } & (
  | { readonly event: 'exchange:start' }
  | {
      readonly event: 'exchange:end';
      readonly outcome: 'success' | 'failure';
      readonly reason?: TokenExchangeError['reason'] | 'signing_failed';
      readonly status?: number;
      readonly attempts: number;
      readonly durationMs: number;
    }
  | { readonly event: 'reauthentication' }
  | {
      readonly event: 'store:lock';
      /** What became of one attempt to take the shared store's lock. */
      readonly outcome: 'acquired' | 'waited' | 'timeout' | 'error';
    }
  | {
      readonly event: 'credentials';
      /**
       * Files re-read and swapped, a new pair rejected (the last good one kept), rotated by call, a rotation that
       * failed, or switched to the next pair after the platform refused the current one as not registered.
       */
      readonly outcome: 'reloaded' | 'rejected' | 'rotated' | 'rotation_failed' | 'switched';
    }
  | { readonly event: 'certificate:expiring'; readonly daysLeft: number }
  | {
      readonly event: 'call:retry';
      /**
       * Why a call to the platform's APIs was re-sent: 429 with `Retry-After`, 502, 503, 504, or a connection that
       * failed before any response.
       */
      readonly reason: 'rate_limited' | 'bad_gateway' | 'unavailable' | 'gateway_timeout' | 'connection_failed';
      readonly resendCount: number;
    }
  | { readonly event: 'call:retry-budget-exhausted' }
  | { readonly event: 'rate_limit:turn'; readonly waitMs: number }
  | {
      readonly event: 'rate_limit:mode';
      /** `fallback`: each replica keeps its share of the limit; `shared`: the fleet shares one limit again. */
      readonly mode: 'shared' | 'fallback';
    }
);

/** The field of the diagnostics event `name` that carries `field`: the event's type is the one definition. */
type EventField<Name, Field extends string> = Extract<
  PlatformAuthDiagnosticsEvent,
  { event: Name } & Record<Field, unknown>
>[Field];

/** Where the rate limit is kept now (`rate_limit:mode`). */
export type RateLimitMode = EventField<'rate_limit:mode', 'mode'>;
/** What became of one attempt to take the shared store's lock (`store:lock`). */
export type StoreLockOutcome = EventField<'store:lock', 'outcome'>;
/** A credential change (`credentials`). */
export type CredentialChangeOutcome = EventField<'credentials', 'outcome'>;
/** Why a call to the platform's APIs was re-sent (`call:retry`). */
export type RetryReason = EventField<'call:retry', 'reason'>;

/** What the retry policy of calls reports. */
export interface RetryObserver {
  /** A call is re-sent for `reason`; `resendCount` is this re-send's number (1 for the first re-send). */
  retried(reason: RetryReason, resendCount: number): void;
  /** The retry budget has no re-send left: failures reach callers at once until it has. Once per such period. */
  retryBudgetExhausted(): void;
}
