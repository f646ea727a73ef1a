import { scheduleOn, systemClock, type Clock } from '../platform-auth.clock.js';

/**
 * `operation`, or the error `onTimeout` makes once `ms` have passed on `clock` (the system clock unless the caller
 * has one injected). The one bound on a wait in the library: the timer never keeps the process alive and is
 * cancelled as soon as either side settles.
 *
 * When the bound passes, the answer may already be waiting on the socket: after the event loop stalled (a long
 * synchronous task, a process the machine did not schedule), Node runs expired timers before it reads sockets, so a
 * peer that answered at once would look like one that never did. The timeout is therefore given one turn of the
 * loop's I/O (`setImmediate` runs after the poll phase) before it is declared.
 */
export function boundedBy<T>(
  operation: Promise<T>,
  ms: number,
  onTimeout: () => Error,
  clock: Clock = systemClock,
): Promise<T> {
  let cancel: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    cancel = scheduleOn(clock, ms, () => setImmediate(() => reject(onTimeout())).unref());
  });
  return Promise.race([operation, timeout]).finally(() => cancel?.());
}
