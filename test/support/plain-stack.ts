/**
 * The error with its stack written out by V8's own formatter, for an error a Vitest global set-up throws. Vitest
 * formats such an error through the module runner's source maps, which, with `experimental.fsModuleCache` on, fail
 * on a module read from the cache: the console showed "TypeError: code.charCodeAt is not a function" in place of
 * the error (Vitest 4.1.12; test/architecture/global-setup-errors.test.ts).
 */
export function withPlainStack(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  // The formatter Vitest's module runner installs is the one that fails; without one, V8 formats the stack itself.
  const formatter = Error as { prepareStackTrace?: unknown };
  const prepare = formatter.prepareStackTrace;
  formatter.prepareStackTrace = undefined;
  try {
    error.stack = String(error.stack);
  } finally {
    formatter.prepareStackTrace = prepare;
  }
  return error;
}
