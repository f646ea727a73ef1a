/**
 * Exponential back-off with equal jitter, capped at `maxDelayMs`, before re-try `attempt` (1 for the first): half the
 * ceiling for sure, the other half at random, so replicas that failed together do not come back together.
 */
export function equalJitterMs(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
