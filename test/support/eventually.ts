import { vi } from 'vitest';

/**
 * Runs `assertion` every 10 ms until it passes, and returns what it returned. The minute is a hang guard, not an
 * expectation of speed: a busy machine takes longer to get there, and still passes (Vitest's own default gives up
 * after one second).
 */
export function eventually<T>(assertion: () => T | Promise<T>): Promise<T> {
  return vi.waitFor(assertion, { timeout: 60_000, interval: 10 });
}
