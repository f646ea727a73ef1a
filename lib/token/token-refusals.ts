/** Tokens obtained lately, remembered so that a 401 for one of them is known as such, and counted once. */
const RECENT_TOKENS_KEPT = 8;

/**
 * What the token cache knows of the platform's refusals (401s): which tokens it obtained lately and which of them
 * were refused, and which exchanges started before the last first refusal. The platform judges expiry by its own
 * clock, so when that clock jumps ahead it refuses every token issued before, the newest one too: after a refusal
 * only a token from an exchange started later is safe to hand out.
 */
export class TokenRefusals {
  // A true private field: the tokens must not show when someone logs or inspects the cache.
  readonly #recent = new Map<string, boolean>();
  private started = 0;
  private staleUpTo = 0;

  /** Numbers an exchange as it starts. */
  exchangeStarted(): number {
    return (this.started += 1);
  }

  obtained(accessToken: string): void {
    if (this.#recent.has(accessToken)) return;
    this.#recent.set(accessToken, false);
    if (this.#recent.size > RECENT_TOKENS_KEPT) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /**
   * The first refusal of a token obtained here: every exchange started so far becomes stale. A token obtained
   * elsewhere, or refused before (another call that carried it), changes nothing.
   */
  refused(accessToken: string): boolean {
    if (this.#recent.get(accessToken) !== false) return false;
    this.#recent.set(accessToken, true);
    this.staleUpTo = this.started;
    return true;
  }

  /** Whether exchange `number` started before the last first refusal; `undefined` (not started yet) is not. */
  isStale(number: number | undefined): boolean {
    return number !== undefined && number <= this.staleUpTo;
  }
}
