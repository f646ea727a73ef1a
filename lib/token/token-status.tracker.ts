import type { CredentialsHolder } from '../credentials/credentials.holder.js';
import { certificateNotAfterMs, daysLeft } from '../credentials/credentials.holder.js';
import type { CredentialReloadStatus } from '../credentials/credentials.reloader.js';
import type { CachedToken, ExchangeReport } from './token.cache.js';
import type { LastExchangeStatus, SharedStoreStatus, TokenProviderStatus, TokenState } from './token-status.types.js';

/** What `status()` reads besides what the tracker records. */
export interface StatusSources {
  readonly integration: string;
  readonly now: number;
  readonly state: TokenState;
  readonly token: CachedToken | undefined;
  readonly holder: CredentialsHolder;
  readonly reload: CredentialReloadStatus;
  readonly sharedStore?: SharedStoreStatus;
  /** The last switch to the next pair, while the files have not caught up. */
  readonly switched?: { readonly atMs: number; readonly from: string; readonly to: string };
}

/**
 * Keeps what the token cache reports about finished exchanges, and builds the status snapshot. Off the hot path:
 * it runs once per exchange and once per `status()` call.
 */
export class TokenStatusTracker {
  private last?: LastExchangeStatus;
  private consecutiveFailures = 0;
  private retryAtMs?: number;

  record(report: ExchangeReport): void {
    const error = report.error;
    this.last = {
      at: new Date(report.finishedAtMs),
      ok: report.ok,
      reason: error?.reason,
      status: error?.status,
      oauthError: error?.oauthError,
      attempts: report.attempts ?? error?.attempts ?? 1,
      durationMs: report.finishedAtMs - report.startedAtMs,
    };
    this.consecutiveFailures = report.consecutiveFailures;
    this.retryAtMs = report.retryAtMs;
  }

  snapshot(sources: StatusSources): TokenProviderStatus {
    const { now, token, holder } = sources;
    const active = holder.active;
    const notAfter = certificateNotAfterMs(active.credentials);
    return {
      integration: sources.integration,
      state: sources.state,
      token: token && {
        expiresAt: token.expiresAt,
        expiresInMs: token.expiresAtMs - now,
        ageMs: now - token.issuedAtMs,
        usable: now < token.unusableAtMs,
      },
      lastExchange: this.last,
      consecutiveFailures: this.consecutiveFailures,
      nextAttemptAt: sources.state === 'backoff' && this.retryAtMs !== undefined ? new Date(this.retryAtMs) : undefined,
      certificate:
        notAfter === undefined
          ? undefined
          : { notAfter: new Date(notAfter), daysLeft: daysLeft(notAfter, now), expired: now >= notAfter },
      credentials: {
        thumbprint: active.credentials.thumbprint,
        activatedAt: new Date(active.activatedAtMs),
        reload: sources.reload,
        next: holder.next && { thumbprint: holder.next.thumbprint },
        switched: sources.switched && {
          at: new Date(sources.switched.atMs),
          from: sources.switched.from,
          to: sources.switched.to,
        },
      },
      sharedStore: sources.sharedStore,
    };
  }
}
