import { createHash } from 'node:crypto';
import type { EmulatorResponse } from './emulator.http.js';
import type { EmulatorCounters } from './emulator.types.js';

type IdempotencyCounters = EmulatorCounters['idempotency'];

/** The answers kept at most; the oldest key is forgotten first, as a platform's retention window would. */
const MAX_KEYS = 200_000;

/**
 * The platform's side of idempotency keys on the placeholder API: a request whose `Idempotency-Key` this
 * integration already sent is answered with the first answer, and is not processed again. A key reused for another
 * request (method, path or body) is refused (422), as the IETF draft on the header has it.
 */
export class IdempotencyJournal {
  private readonly answers = new Map<string, { fingerprint: string; response: EmulatorResponse }>();
  private countersState: IdempotencyCounters = { keys: 0, duplicates: 0, mismatches: 0 };

  get counters(): IdempotencyCounters {
    return { ...this.countersState };
  }

  /** Zeroes the counts; the answers stay, so a key sent again is still answered from the journal. */
  resetCounters(): void {
    this.countersState = { keys: 0, duplicates: 0, mismatches: 0 };
  }

  /**
   * The answer to a request with `key`: the journal's, or `process()`'s, kept for the next request with the key.
   * Synchronous from lookup to store, so two requests with one key at once are answered once.
   */
  answer(
    machineId: string,
    key: string | undefined,
    request: { method: string; path: string; body: Buffer },
    process: () => EmulatorResponse,
  ): EmulatorResponse {
    if (key === undefined) return process();
    const id = `${machineId}\n${key}`;
    const fingerprint = createHash('sha256')
      .update(`${request.method} ${request.path}\n`)
      .update(request.body)
      .digest('hex');
    const known = this.answers.get(id);
    if (known) {
      if (known.fingerprint !== fingerprint) {
        this.countersState.mismatches += 1;
        return {
          status: 422,
          body: {
            error: 'idempotency_key_reused',
            error_description: 'the Idempotency-Key was already used for a different request',
          },
        };
      }
      this.countersState.duplicates += 1;
      return { ...known.response, headers: { ...known.response.headers, 'idempotent-replayed': 'true' } };
    }
    const response = process();
    this.answers.set(id, { fingerprint, response });
    this.countersState.keys += 1;
    if (this.answers.size > MAX_KEYS) this.answers.delete(this.answers.keys().next().value!);
    return response;
  }
}
