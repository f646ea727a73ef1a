import { TenantResolutionError } from './tenants.errors.js';

const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;

interface Failure {
  readonly count: number;
  readonly error: TenantResolutionError;
}

/**
 * Failed resolutions, shared by every caller until their back-off ends (1 s, doubling per further failure, at most
 * 30 s), so a failing resolver is not called at every `get`. At most `limit` are remembered, oldest dropped first:
 * tenant ids come from requests, and a flood of made-up ids must not grow memory.
 */
export class TenantFailures {
  private readonly failures = new Map<string, Failure>();
  total = 0;

  constructor(private readonly limit: number) {}

  /** The shared failure while its back-off lasts. */
  current(tenantId: string, nowMs: number): TenantResolutionError | undefined {
    const failure = this.failures.get(tenantId);
    return failure && failure.error.retryAt.getTime() > nowMs ? failure.error : undefined;
  }

  record(tenantId: string, cause: unknown, nowMs: number): TenantResolutionError {
    const count = (this.failures.get(tenantId)?.count ?? 0) + 1;
    const backoffMs = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (count - 1));
    const error = new TenantResolutionError(tenantId, new Date(nowMs + backoffMs), cause, backoffMs);
    this.failures.delete(tenantId);
    this.failures.set(tenantId, { count, error });
    if (this.failures.size > this.limit) this.failures.delete(this.failures.keys().next().value!);
    this.total += 1;
    return error;
  }

  forget(tenantId: string): void {
    this.failures.delete(tenantId);
  }
}
