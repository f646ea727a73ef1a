/**
 * Who may start a call, and who waits for the calls in flight: a tenant that was evicted takes no new call but lets
 * those in flight have their answers before its sockets close. Every client asks it at the one place each call
 * enters (the axios adapter, `PlatformFetch.fetch`, the undici dispatch), so no way into a client goes around it.
 */
export interface CallAdmission {
  /** Before a call: the error it fails with at once, or `undefined` when it may go (it is then in flight). */
  enter(): Error | undefined;
  /** When the call settled (its answer or its failure given to the caller): the failure as the caller gets it. */
  leave(failure?: unknown): unknown;
}

/** `start`'s call through `admission`: refused at once, or counted in flight until it settles. */
export function admitted<T>(admission: CallAdmission, start: () => Promise<T>): Promise<T> {
  const refused = admission.enter();
  if (refused !== undefined) return Promise.reject(refused);
  // A start that throws rejects this promise, and leaves like any other failure.
  return new Promise<T>((resolve) => resolve(start())).then(
    (answer) => {
      admission.leave();
      return answer;
    },
    (error: unknown) => {
      throw admission.leave(error);
    },
  );
}
