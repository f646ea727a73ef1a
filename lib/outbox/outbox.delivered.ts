/** How many sends one worker process remembers whose completion Redis may not have recorded. */
const REMEMBERED = 1_000;

/**
 * The sends this process had the platform take (a 2xx) until Redis records the job as sent. When Redis is lost
 * between the two, BullMQ runs the job again (after a failed move, or once its lock ran out); this worker then ends it
 * as sent with the status it had, instead of sending it again. Another process that picks the job up does not know:
 * it asks `reconcile`, or sends again under the same key.
 */
export class DeliveredSends {
  readonly #sent = new Map<string, number>();

  remember(id: string, status: number): void {
    this.#sent.delete(id);
    this.#sent.set(id, status);
    // The oldest first: a job whose completion another process recorded is never forgotten otherwise.
    if (this.#sent.size > REMEMBERED) this.#sent.delete(this.#sent.keys().next().value as string);
  }

  /** The status the platform answered to this process's send of `id`, if Redis may not have recorded it. */
  status(id: string): number | undefined {
    return this.#sent.get(id);
  }

  recorded(id: string): void {
    this.#sent.delete(id);
  }
}
