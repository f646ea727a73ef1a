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

/** One store operation, bounded by `timeoutMs`; any failure becomes `StoreUnavailable`. */
export async function boundedStoreOperation<T>(operation: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const pending = Promise.resolve().then(operation);
  // A late failure of an operation that lost the race must not surface as an unhandled rejection.
  pending.catch(() => undefined);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailable('timeout', `no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    throw error instanceof StoreUnavailable ? error : new StoreUnavailable(describeStoreError(error));
  } finally {
    clearTimeout(timer);
  }
}
