/** A signal that aborts when either does, for waits that two things may end; the one given when the other is not. */
export function eitherSignal(first?: AbortSignal, second?: AbortSignal): AbortSignal | undefined {
  return first && second ? AbortSignal.any([first, second]) : (first ?? second);
}
