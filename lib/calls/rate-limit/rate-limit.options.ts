import type { ConfigReport } from '../../options/config.report.js';
import type { ReadPlatformAuthOptions } from '../../options/options.read.js';
import { optionDefault } from '../../options/options.table.js';
import { rateLimitShape, type RateLimitShape } from './rate-limit.schedule.js';

/** `rateLimit` after start-up validation. */
export interface ResolvedRateLimit {
  readonly shape: RateLimitShape;
  readonly maxWaitMs: number;
}

/**
 * Validates `rateLimit` into `report` (every problem at once). `undefined` when none is configured or when it has
 * problems. A limit beside a `TokenStore` of the application's own (not Redis the module can run a script on) is
 * kept per replica, and the report says so.
 */
export function resolveRateLimitOptions(
  options: ReadPlatformAuthOptions,
  report: ConfigReport,
): ResolvedRateLimit | undefined {
  const given = options.rateLimit;
  if (given === undefined) return undefined;
  const problemsBefore = report.problems.length;
  const { requestsPerSecond, burst } = given;
  const maxWaitMs = given.maxWaitMs ?? optionDefault<number>('rateLimit.maxWaitMs');
  const perSecond =
    typeof requestsPerSecond === 'number' && requestsPerSecond > 0 && Number.isFinite(requestsPerSecond);
  if (requestsPerSecond === undefined)
    report.problem('rateLimit.requestsPerSecond', 'is required with rateLimit (requests per second, more than 0)');
  else if (!perSecond)
    report.problem(
      'rateLimit.requestsPerSecond',
      `must be a finite number above 0, got ${describe(requestsPerSecond)}`,
    );
  const largest = perSecond ? Math.max(1, Math.floor(requestsPerSecond)) : undefined;
  if (
    burst !== undefined &&
    !(Number.isSafeInteger(burst) && burst >= 1 && (largest === undefined || burst <= largest))
  )
    report.problem(
      'rateLimit.burst',
      `must be a whole number from 1 to ${largest ?? "one second's worth of requests"}, got ${describe(burst)}`,
    );
  if (!(typeof maxWaitMs === 'number' && Number.isFinite(maxWaitMs) && maxWaitMs >= 0))
    report.problem(
      'rateLimit.maxWaitMs',
      `must be a finite number of milliseconds, at least 0, got ${describe(maxWaitMs)}`,
    );
  if (report.problems.length > problemsBefore) return undefined;
  if (options.tokenStore?.instance !== undefined)
    report.warn(
      'rateLimit',
      'is kept per replica: the replicas share a limit through tokenStore.url or tokenStore.client (Redis), not through a TokenStore instance',
    );
  return { shape: rateLimitShape(requestsPerSecond, burst), maxWaitMs };
}

function describe(value: unknown): string {
  return typeof value === 'number' ? String(value) : typeof value;
}
