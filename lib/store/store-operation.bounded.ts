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
 * One store operation, bounded by `timeoutMs`; any failure becomes `StoreUnavailable`.
 *
 * When the bound passes, the answer may already be waiting on the socket: after the event loop stalled (a long
 * synchronous task, a process the machine did not schedule), Node runs expired timers before it reads sockets, so a
 * store that answered at once would look like one that never did. The timeout is therefore given one turn of the
 * loop's I/O (`setImmediate` runs after the poll phase) before it is declared.
 */
export async function boundedStoreOperation<T>(operation: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const pending = Promise.resolve().then(operation);
  // A late failure of an operation that lost the race must not surface as an unhandled rejection.
  pending.catch(() => undefined);
  const timeout = new Promise<never>((_, reject) => {
    const expire = () => reject(new StoreUnavailable('timeout', `no answer within ${timeoutMs} ms`));
    timer = setTimeout(() => setImmediate(expire).unref(), timeoutMs);
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
