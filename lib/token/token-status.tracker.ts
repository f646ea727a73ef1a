import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { certificateNotAfterMs } from '../credentials/active-credentials.js';
import { daysLeft } from '../credentials/certificate.loader.js';
import type { CredentialsLifecycle } from './credentials.lifecycle.js';
import type { ExchangeReport, TokenCache, TokenCacheListener } from './token.cache.js';
import type {
  LastExchangeStatus,
  RateLimitStatus,
  SharedStoreStatus,
  TokenProviderStatus,
} from './token-status.types.js';

/** The parts `status()` reads besides what the tracker records. */
interface StatusSources {
  readonly integration: string;
  readonly clock: Clock;
  readonly cache: Pick<TokenCache, 'state' | 'current'>;
  readonly credentials: Pick<CredentialsLifecycle, 'describe' | 'reloadStatus'>;
  readonly sharedStore?: { status(): SharedStoreStatus };
  readonly rateLimit?: { status(): RateLimitStatus };
}

/**
 * The token cache's listener: keeps what it reports about finished exchanges, says when a background renewal
 * failed, and builds the status snapshot. Off the hot path: it runs once per exchange and once per `status()` call.
 */
export class TokenStatusTracker implements TokenCacheListener {
  private last?: LastExchangeStatus;
  private consecutiveFailures = 0;
  private retryAtMs?: number;

  constructor(private readonly logger: LoggerService) {}

  renewalFailed(error: Error): void {
    this.logger.warn(`Background token renewal failed; the current token is served until it expires. ${error.message}`);
  }

  exchanged(report: ExchangeReport): void {
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
    const now = sources.clock.now();
    const { state, current: token } = sources.cache;
    const { active, next, switched } = sources.credentials.describe();
    const notAfter = certificateNotAfterMs(active.credentials);
    return {
      integration: sources.integration,
      state,
      token: token && {
        expiresAt: token.expiresAt,
        expiresInMs: token.expiresAtMs - now,
        ageMs: now - token.issuedAtMs,
        usable: now < token.unusableAtMs,
      },
      lastExchange: this.last,
      consecutiveFailures: this.consecutiveFailures,
      nextAttemptAt: state === 'backoff' && this.retryAtMs !== undefined ? new Date(this.retryAtMs) : undefined,
      certificate:
        notAfter === undefined
          ? undefined
          : { notAfter: new Date(notAfter), daysLeft: daysLeft(notAfter, now), expired: now >= notAfter },
      credentials: {
        thumbprint: active.credentials.thumbprint,
        activatedAt: new Date(active.activatedAtMs),
        reload: sources.credentials.reloadStatus(),
        next: next && { thumbprint: next.thumbprint },
        switched: switched && { at: new Date(switched.atMs), from: switched.from, to: switched.to },
      },
      sharedStore: sources.sharedStore?.status(),
      rateLimit: sources.rateLimit?.status(),
    };
  }
}
