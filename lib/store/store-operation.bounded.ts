import { boundedBy } from '../util/bounded.util.js';
import { describeStoreError } from './token-store.errors.js';

/** The store did not answer in time, or failed: the caller carries on without it. Never leaves the store layer. */
export class StoreUnavailable extends Error {
  /** `problem`: the short name for `status()`; `said`: the words for the log line. */
  constructor(
    readonly problem: string,
    readonly said: string = problem,
  ) {
    super(said);
  }
}

/**
 * One store operation, bounded by `timeoutMs` (`boundedBy`, which lets an answer already on the socket win after a
 * stalled event loop); any failure becomes `StoreUnavailable`.
 */
export async function boundedStoreOperation<T>(operation: () => Promise<T>, timeoutMs: number): Promise<T> {
  const expired = () => new StoreUnavailable('timeout', `no answer within ${timeoutMs} ms`);
  try {
    return await boundedBy(Promise.resolve().then(operation), timeoutMs, expired);
  } catch (error) {
    throw error instanceof StoreUnavailable ? error : new StoreUnavailable(describeStoreError(error));
  }
}
