/** undici 7's handler interface: `compose` hands every interceptor one (it wraps the older callback kind). */
export interface Controller {
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

/**
 * The controller the downstream handler holds across the attempts of one call: it forwards to the current
 * attempt's, keeps a pause across, and remembers an abort that came between attempts, so no re-send follows it.
 */
export class CurrentController implements Controller {
  private current?: Controller;
  private pausedHere = false;
  private abortedHere: Error | null = null;

  set target(controller: Controller) {
    this.current = controller;
    if (this.pausedHere) controller.pause();
  }

  get aborted(): boolean {
    return this.abortedHere !== null || (this.current?.aborted ?? false);
  }

  get paused(): boolean {
    return this.pausedHere || (this.current?.paused ?? false);
  }

  get reason(): Error | null {
    return this.abortedHere ?? this.current?.reason ?? null;
  }

  abort(reason: Error): void {
    this.abortedHere = reason;
    this.current?.abort(reason);
  }

  pause(): void {
    this.pausedHere = true;
    this.current?.pause();
  }

  resume(): void {
    this.pausedHere = false;
    this.current?.resume();
  }
}
