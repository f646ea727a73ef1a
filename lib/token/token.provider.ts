import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { AssertionSigner } from './assertion.signer.js';
import type { Clock } from '../platform-auth.clock.js';
import { LOGGER_CONTEXT, PLATFORM_AUTH_CLOCK, PLATFORM_AUTH_CONFIG } from '../platform-auth.constants.js';
import { TokenExchangeError } from '../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { TokenExchangeClient, type AttemptFailure, type AttemptSuccess } from './token-exchange.client.js';
import { describeClockSkew, hintForRejection, isSkewed } from './token-exchange.hints.js';

export interface AccessToken {
  readonly accessToken: string;
  /** Always `Bearer`. */
  readonly tokenType: string;
  /** When the platform said the token expires, by the local clock. */
  readonly expiresAt: Date;
}

interface CachedToken extends AccessToken {
  readonly expiresAtMs: number;
  /** From here on a background renewal starts. */
  readonly renewAtMs: number;
  /** From here on the token is no longer handed out. */
  readonly unusableAtMs: number;
}

interface FailureState {
  readonly error: TokenExchangeError;
  readonly retryAtMs: number;
  readonly consecutive: number;
}

const MAX_FAILURE_BACKOFF_MS = 30_000;
/** The longest `Retry-After` honoured after an exchange gave up; beyond it the platform is asked again anyway. */
const MAX_RETRY_AFTER_BACKOFF_MS = 5 * 60_000;
/** Fraction of the renewal lead time used as jitter, so a fleet does not renew in lockstep. */
const RENEWAL_JITTER = 0.1;

/**
 * Holds the access token: exchanges an assertion for it, caches it, renews it ahead of expiry, and makes concurrent
 * callers share one exchange. One instance per module instance; nothing is shared across applications.
 */
@Injectable()
export class TokenProvider implements OnModuleDestroy {
  private readonly logger = new Logger(LOGGER_CONTEXT);
  private readonly client: TokenExchangeClient;
  private readonly shutdown = new AbortController();
  // True private fields: the token must not show when someone logs or inspects the provider.
  #current?: CachedToken;
  #inflight?: Promise<CachedToken>;
  private failure?: FailureState;
  private measuredOffsetMs?: number;
  /** `Retry-After` of the last failed attempt, kept for the back-off after the exchange gives up. */
  private lastRetryAfterMs?: number;
  private exchangeCount = 0;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) private readonly config: ResolvedPlatformAuthConfig,
    @Inject(PLATFORM_AUTH_CLOCK) private readonly clock: Clock,
    private readonly signer: AssertionSigner,
  ) {
    this.client = new TokenExchangeClient(config, () => clock.now());
  }

  /**
   * The cached token when one is usable right now, else `undefined` (then call `getAccessToken()`). Synchronous, for
   * hot paths such as the interceptor; it starts a background renewal when the token is due, like `getAccessToken()`.
   */
  peekAccessToken(): string | undefined {
    return this.usableToken()?.accessToken;
  }

  /** A valid access token, from the cache when possible. */
  getAccessToken(): Promise<string> {
    const cached = this.usableToken();
    if (cached) return Promise.resolve(cached.accessToken);
    return this.acquire().then((token) => token.accessToken);
  }

  /** The access token with its type and expiry. */
  async getToken(): Promise<AccessToken> {
    const token = this.usableToken() ?? (await this.acquire());
    return { accessToken: token.accessToken, tokenType: token.tokenType, expiresAt: token.expiresAt };
  }

  /**
   * Drops `token` if it is still the cached one (say, after the platform answered 401 to it). A token that was
   * already replaced is left alone, so a late 401 never throws away a fresh token.
   */
  invalidate(token: string): boolean {
    if (this.#current?.accessToken !== token) return false;
    this.#current = undefined;
    return true;
  }

  /** Platform clock minus local clock, from the last token response's `Date` header. */
  get clockOffsetMs(): number | undefined {
    return this.measuredOffsetMs;
  }

  /** Exchanges performed (attempts within one exchange count once). */
  get exchanges(): number {
    return this.exchangeCount;
  }

  onModuleDestroy(): void {
    this.shutdown.abort(
      new TokenExchangeError('token provider is shut down', {
        reason: 'aborted',
        attempts: 0,
        retried: false,
        hint: 'The module was destroyed; no new tokens are fetched.',
      }),
    );
    this.#current = undefined;
    this.client.destroy();
  }

  private usableToken(): CachedToken | undefined {
    const token = this.#current;
    if (!token) return undefined;
    const now = this.clock.now();
    if (now >= token.unusableAtMs) return undefined;
    if (now >= token.renewAtMs && !this.#inflight && !this.inBackoff(now)) this.renewInBackground();
    return token;
  }

  private inBackoff(now: number): boolean {
    return this.failure !== undefined && now < this.failure.retryAtMs;
  }

  private renewInBackground(): void {
    this.startExchange().catch((error: unknown) => {
      if (error instanceof TokenExchangeError && error.reason === 'aborted') return;
      this.logger.warn(
        `Background token renewal failed; the current token is served until it expires. ${(error as Error).message}`,
      );
    });
  }

  private acquire(): Promise<CachedToken> {
    if (this.shutdown.signal.aborted) return Promise.reject(this.shutdown.signal.reason as Error);
    if (this.#inflight) return this.#inflight;
    const failure = this.failure;
    if (failure && this.clock.now() < failure.retryAtMs) {
      const wait = failure.retryAtMs - this.clock.now();
      return Promise.reject(
        new TokenExchangeError(`token exchange failed recently; next attempt in ${wait} ms`, {
          ...failure.error,
          reason: 'backoff',
          hint: `${failure.error.hint} (Failing fast until the back-off ends, so the token endpoint is not hammered.)`,
        }),
      );
    }
    return this.startExchange();
  }

  private startExchange(): Promise<CachedToken> {
    const exchange = this.exchange()
      .then(
        (token) => {
          this.#current = token;
          this.failure = undefined;
          return token;
        },
        (error: unknown) => {
          if (error instanceof TokenExchangeError && error.reason !== 'aborted') {
            const consecutive = (this.failure?.consecutive ?? 0) + 1;
            const backoff = Math.min(MAX_FAILURE_BACKOFF_MS, this.config.failureBackoffMs * 2 ** (consecutive - 1));
            const retryAfter = Math.min(MAX_RETRY_AFTER_BACKOFF_MS, this.lastRetryAfterMs ?? 0);
            this.failure = { error, consecutive, retryAtMs: this.clock.now() + Math.max(backoff, retryAfter) };
          }
          throw error;
        },
      )
      .finally(() => {
        if (this.#inflight === exchange) this.#inflight = undefined;
      });
    this.#inflight = exchange;
    return exchange;
  }

  /** One exchange: fresh assertion per attempt, transient failures retried with back-off, all bounded. */
  private async exchange(): Promise<CachedToken> {
    this.exchangeCount += 1;
    const { retry } = this.config;
    const signal = this.shutdown.signal;
    const startedAt = this.clock.now();
    let attempts = 0;
    let skewRetryDone = false;
    this.lastRetryAfterMs = undefined;
    let previous: AttemptFailure | undefined;
    for (;;) {
      attempts += 1;
      const offsetUsed = this.config.correctClockSkew ? (this.measuredOffsetMs ?? 0) : 0;
      const assertion = await this.signer.createAssertion({ clockOffsetMs: offsetUsed });
      const sentAt = this.clock.now();
      // The first attempt gets its full timeout; retries only what is left of the exchange's budget.
      const timeoutMs = previous
        ? Math.min(this.config.exchangeTimeoutMs, retry.maxTotalMs - (sentAt - startedAt))
        : this.config.exchangeTimeoutMs;
      if (previous && timeoutMs <= 0) throw this.toError(previous, attempts - 1);
      const outcome = await this.client.attempt(assertion, signal, timeoutMs);
      if (outcome.clockOffsetMs !== undefined) this.measuredOffsetMs = outcome.clockOffsetMs;
      if (outcome.ok) return this.accept(outcome, sentAt);
      if (signal.aborted) throw signal.reason as Error;

      if (this.shouldRetryWithSkewCorrection(outcome, offsetUsed, skewRetryDone)) {
        skewRetryDone = true;
        this.logger.warn(
          `Clock skew detected; retrying once with assertion times corrected. ${describeClockSkew(this.offsetSeconds(outcome.clockOffsetMs)!)}`,
        );
        continue;
      }
      this.lastRetryAfterMs = outcome.retryAfterMs;
      const elapsed = this.clock.now() - startedAt;
      const delay = outcome.retryable ? this.retryDelay(attempts, outcome.retryAfterMs) : undefined;
      const canRetry = delay !== undefined && attempts < retry.maxAttempts && elapsed + delay <= retry.maxTotalMs;
      if (!canRetry) throw this.toError(outcome, attempts);
      previous = outcome;
      await this.clock.sleep(delay, signal).catch(() => {
        throw signal.reason as Error;
      });
    }
  }

  private accept(outcome: AttemptSuccess, sentAt: number): CachedToken {
    for (const warning of outcome.warnings) this.logger.warn(warning);
    const offsetSeconds = this.offsetSeconds(outcome.clockOffsetMs);
    if (isSkewed(offsetSeconds) && !this.config.correctClockSkew) this.logger.warn(describeClockSkew(offsetSeconds));
    const lifetimeMs = outcome.token.expiresInSeconds * 1000;
    const leadMs =
      Math.min(this.config.refreshBeforeExpirySeconds * 1000, lifetimeMs / 2) * (1 - RENEWAL_JITTER * Math.random());
    const expiresAtMs = sentAt + lifetimeMs;
    return {
      accessToken: outcome.token.accessToken,
      tokenType: outcome.token.tokenType,
      expiresAt: new Date(expiresAtMs),
      expiresAtMs,
      renewAtMs: expiresAtMs - leadMs,
      // A margin so a token is not handed out in its very last moments, where it would expire in flight.
      unusableAtMs: expiresAtMs - Math.min(5_000, lifetimeMs / 10),
    };
  }

  /**
   * Exponential back-off with equal jitter, capped at `maxDelayMs`; or the server's `Retry-After`. A `Retry-After`
   * longer than `maxDelayMs` ends the exchange (`undefined`): the wait is then honoured by the failure back-off.
   */
  private retryDelay(attempt: number, retryAfterMs: number | undefined): number | undefined {
    const { baseDelayMs, maxDelayMs } = this.config.retry;
    if (retryAfterMs !== undefined) return retryAfterMs <= maxDelayMs ? retryAfterMs : undefined;
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  /** A refusal (not a rate limit or timeout) while the platform's clock is off: worth one try with corrected times. */
  private shouldRetryWithSkewCorrection(outcome: AttemptFailure, offsetUsed: number, alreadyDone: boolean): boolean {
    const { status, clockOffsetMs } = outcome;
    return (
      this.config.correctClockSkew &&
      !alreadyDone &&
      status !== undefined &&
      status >= 400 &&
      status < 500 &&
      status !== 408 &&
      status !== 429 &&
      isSkewed(this.offsetSeconds(clockOffsetMs)) &&
      Math.abs((clockOffsetMs ?? 0) - offsetUsed) > 1000
    );
  }

  private offsetSeconds(offsetMs: number | undefined): number | undefined {
    return offsetMs === undefined ? undefined : Math.round(offsetMs / 1000);
  }

  private toError(outcome: AttemptFailure, attempts: number): TokenExchangeError {
    const clockOffsetSeconds = this.offsetSeconds(outcome.clockOffsetMs);
    let hint: string;
    switch (outcome.reason) {
      case 'http_error':
        hint = outcome.retryable
          ? `The platform kept failing (HTTP ${outcome.status}) after ${attempts} attempt(s); it may be down or rate limiting.${outcome.retryAfterMs !== undefined ? ` It asked to retry after ${Math.ceil(outcome.retryAfterMs / 1000)} s; callers fail fast until then (at most ${MAX_RETRY_AFTER_BACKOFF_MS / 60_000} min).` : ''} ${isSkewed(clockOffsetSeconds) ? describeClockSkew(clockOffsetSeconds) : ''}`.trim()
          : hintForRejection(outcome.status!, outcome.oauthError, outcome.oauthErrorDescription, clockOffsetSeconds);
        break;
      case 'redirect':
        hint =
          'The token endpoint redirected; redirects are not followed so the assertion is never re-posted elsewhere. Check baseUrl (scheme, host) and tokenPath.';
        break;
      case 'invalid_response':
        hint =
          "The endpoint did not answer with a token response: check that baseUrl and tokenPath point at the platform's token endpoint.";
        break;
      case 'timeout':
      case 'network_error':
        hint = `The token endpoint could not be reached after ${attempts} attempt(s): check baseUrl, DNS, proxies and firewalls.`;
        break;
      default:
        hint = 'The exchange was cancelled.';
    }
    return new TokenExchangeError(outcome.summary, {
      reason: outcome.reason,
      status: outcome.status,
      oauthError: outcome.oauthError,
      oauthErrorDescription: outcome.oauthErrorDescription,
      attempts,
      retried: attempts > 1,
      hint,
      clockOffsetSeconds,
      networkCode: outcome.networkCode,
    });
  }
}
