import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { PlatformAuthSettings } from '../options/options.resolver.js';
import { equalJitterMs } from '../util/backoff.util.js';
import { effectiveClockMargin } from './assertion.signer.js';
import type { AttemptFailure, AttemptSuccess, TokenExchangeClient } from './token-exchange.client.js';
import { describeClockSkew, exchangeError, isSkewed, offsetSeconds, type HintContext } from './token-exchange.hints.js';
import type { ExchangeOutcome, IssuedToken } from './token.cache.js';
import { isNotRegisteredRefusal, type ExchangeSigners } from './next-pair.switch.js';

type ExchangeAttemptsConfig = Pick<
  PlatformAuthSettings,
  'retry' | 'exchangeTimeoutMs' | 'correctClockSkew' | 'tokenUrl' | 'clockMarginSeconds' | 'assertionLifetimeSeconds'
>;

/** Where the attempts get their signers, once per exchange: the credential lifecycle. */
interface SignerSource {
  signers(): ExchangeSigners;
}

/**
 * One exchange, made of attempts: a fresh assertion per attempt (the signer is asked each time, so credentials
 * swapped meanwhile apply from the next attempt), transient failures retried with equal jitter or `Retry-After`, all within the
 * exchange's budget, and one retry with corrected times when the platform's clock is off. When the platform refuses
 * the current pair as not registered and a next pair is configured, the next attempt, at once, is signed with the
 * next pair (and so are its retries); accepted, it becomes the current pair. Keeps only what outlives an exchange:
 * the measured clock offset.
 */
export class TokenExchangeAttempts {
  private measuredOffsetMs?: number;
  private readonly hints: HintContext;

  constructor(
    private readonly config: ExchangeAttemptsConfig,
    private readonly clock: Clock,
    private readonly pairs: SignerSource,
    private readonly client: Pick<TokenExchangeClient, 'attempt'>,
    private readonly logger: LoggerService,
  ) {
    // The clock margin is what the assertion tolerates, so it is also where an offset becomes worth mentioning.
    this.hints = { host: new URL(config.tokenUrl).host, clockToleranceSeconds: effectiveClockMargin(config) };
  }

  /** Platform clock minus local clock, from the last token response's `Date` header. */
  get clockOffsetMs(): number | undefined {
    return this.measuredOffsetMs;
  }

  /** The exchange the token cache asks for, signed with the pairs in use. */
  exchange(signal: AbortSignal): Promise<ExchangeOutcome> {
    return this.run(signal, this.pairs.signers());
  }

  /**
   * One exchange signed with `signers` (a rotation passes its candidate's). Resolves with the outcome; rejects only
   * with the signal's reason or a signing failure.
   */
  async run(signal: AbortSignal, signers: ExchangeSigners): Promise<ExchangeOutcome> {
    const { retry, exchangeTimeoutMs, correctClockSkew } = this.config;
    const startedAt = this.clock.now();
    let attempts = 0;
    let skewRetryDone = false;
    let previous: AttemptFailure | undefined;
    /** Set once the current pair was refused as not registered: this exchange signs with the next pair from then. */
    let next: ExchangeSigners['next'];
    let refusedCurrent: AttemptFailure | undefined;
    for (;;) {
      attempts += 1;
      const offsetUsed = correctClockSkew ? (this.measuredOffsetMs ?? 0) : 0;
      const assertion = await (next?.signer ?? signers.current).createAssertion({ clockOffsetMs: offsetUsed });
      const sentAt = this.clock.now();
      // The first attempt gets its full timeout; retries only what is left of the exchange's budget.
      const timeoutMs = previous
        ? Math.min(exchangeTimeoutMs, retry.maxTotalMs - (sentAt - startedAt))
        : exchangeTimeoutMs;
      if (previous && timeoutMs <= 0) return failed(previous, attempts - 1, this.hints);
      const outcome = await this.client.attempt(assertion, signal, timeoutMs);
      if (outcome.clockOffsetMs !== undefined) this.measuredOffsetMs = outcome.clockOffsetMs;
      if (outcome.ok) {
        next?.accepted();
        return { ok: true, token: this.accept(outcome, sentAt), attempts };
      }
      if (signal.aborted) throw signal.reason as Error;

      if (!next && isNotRegisteredRefusal(outcome)) {
        next = signers.next;
        if (next) {
          refusedCurrent = outcome;
          continue; // at once, within this exchange
        }
      }
      // The next pair refused as well: the current pair's refusal is the one to report.
      if (refusedCurrent && isNotRegisteredRefusal(outcome)) return failed(refusedCurrent, attempts, this.hints);

      if (this.shouldRetryWithSkewCorrection(outcome, offsetUsed, skewRetryDone)) {
        skewRetryDone = true;
        this.logger.warn(
          `Clock skew detected; retrying once with assertion times corrected. ${describeClockSkew(offsetSeconds(outcome.clockOffsetMs)!)}`,
        );
        continue;
      }
      const elapsed = this.clock.now() - startedAt;
      const delay = outcome.transient ? this.retryDelay(attempts, outcome.retryAfterMs) : undefined;
      const canRetry =
        delay !== undefined &&
        attempts < retry.maxAttempts &&
        attempts <= (outcome.maxRetries ?? Infinity) &&
        elapsed + delay <= retry.maxTotalMs;
      if (!canRetry) return failed(outcome, attempts, this.hints);
      previous = outcome;
      await this.clock.sleep(delay, signal);
    }
  }

  private accept(outcome: AttemptSuccess, sentAt: number): IssuedToken {
    for (const warning of outcome.warnings) this.logger.warn(warning);
    const skew = offsetSeconds(outcome.clockOffsetMs);
    if (isSkewed(skew, this.hints.clockToleranceSeconds) && !this.config.correctClockSkew)
      this.logger.warn(describeClockSkew(skew));
    const { accessToken, tokenType, expiresInSeconds } = outcome.token;
    return { accessToken, tokenType, issuedAtMs: sentAt, expiresAtMs: sentAt + expiresInSeconds * 1000 };
  }

  /**
   * Exponential back-off with equal jitter, capped at `maxDelayMs`; or the server's `Retry-After`. A `Retry-After`
   * longer than `maxDelayMs` ends the exchange (`undefined`): the wait is then honoured by the failure back-off.
   */
  private retryDelay(attempt: number, retryAfterMs: number | undefined): number | undefined {
    const { baseDelayMs, maxDelayMs } = this.config.retry;
    if (retryAfterMs !== undefined) return retryAfterMs <= maxDelayMs ? retryAfterMs : undefined;
    return equalJitterMs(attempt, baseDelayMs, maxDelayMs);
  }

  /** A refusal (not a rate limit or timeout) while the platform's clock is off: worth one try with corrected times. */
  private shouldRetryWithSkewCorrection(outcome: AttemptFailure, offsetUsed: number, alreadyDone: boolean): boolean {
    const { clockOffsetMs } = outcome;
    return (
      this.config.correctClockSkew &&
      !alreadyDone &&
      outcome.reason === 'http_error' &&
      !outcome.transient &&
      isSkewed(offsetSeconds(clockOffsetMs), this.hints.clockToleranceSeconds) &&
      Math.abs((clockOffsetMs ?? 0) - offsetUsed) > 1000
    );
  }
}

/** The Retry-After of the final failure travels with the error, for the back-off that follows. */
function failed(outcome: AttemptFailure, attempts: number, hints: HintContext): ExchangeOutcome {
  return { ok: false, error: exchangeError(outcome, attempts, hints), retryAfterMs: outcome.retryAfterMs };
}
