import type { LoadedCredentials } from './credentials.loader.js';

/** The credentials assertions are signed with right now, and whose they are. */
export interface ActiveCredentials {
  readonly machineId: string;
  readonly credentials: LoadedCredentials;
  /** When this pair was put in use (start-up, a reload or a rotation), by the module's clock. */
  readonly activatedAtMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The one place the signing credentials live after start-up. A reload or a rotation replaces them with one
 * assignment, so an assertion is always signed by a matching key, certificate thumbprint and machineId.
 */
export class CredentialsHolder {
  // A true private field: the key must not show when someone logs or inspects the holder.
  #active: ActiveCredentials;
  #next?: LoadedCredentials;
  private readonly listeners: ((active: ActiveCredentials) => void)[] = [];

  constructor(machineId: string, credentials: LoadedCredentials, nowMs: number, next?: LoadedCredentials) {
    this.#active = { machineId, credentials, activatedAtMs: nowMs };
    this.#next = next;
  }

  get active(): ActiveCredentials {
    return this.#active;
  }

  /** The next pair (`next*` options), tried when the platform refuses the current one as not registered. */
  get next(): LoadedCredentials | undefined {
    return this.#next;
  }

  /**
   * Makes `next` the current pair, if it still is the next one (a reload may have replaced it meanwhile): the
   * platform accepted it. The old key is closed; there is no next pair until the files or options give one.
   * Returns the pair it replaced, or `undefined` when nothing changed.
   */
  promote(next: LoadedCredentials, nowMs: number): LoadedCredentials | undefined {
    if (this.#next !== next) return undefined;
    const previous = this.#active.credentials;
    this.#next = undefined;
    this.swap(this.#active.machineId, next, nowMs);
    return previous;
  }

  /** Puts another next pair in place (files re-read), or none; the one it replaces is closed unless kept in use. */
  setNext(next: LoadedCredentials | undefined): void {
    const previous = this.#next;
    this.#next = next;
    if (previous && previous.key !== next?.key && previous.key !== this.#active.credentials.key) {
      previous.key.close().catch(() => undefined);
    }
  }

  /**
   * Puts `credentials` in use. The key they replace is closed (a PKCS#11 key ends its sessions once the signatures
   * in flight finish), unless the new pair keeps the same key.
   */
  swap(machineId: string, credentials: LoadedCredentials, nowMs: number): void {
    const previous = this.#active.credentials.key;
    this.#active = { machineId, credentials, activatedAtMs: nowMs };
    // A pair put in use that was the next one is no longer next.
    if (this.#next?.thumbprint === credentials.thumbprint) {
      if (this.#next.key !== credentials.key) this.#next.key.close().catch(() => undefined);
      this.#next = undefined;
    }
    if (previous !== credentials.key) previous.close().catch(() => undefined);
    for (const listener of this.listeners) listener(this.#active);
  }

  onSwap(listener: (active: ActiveCredentials) => void): void {
    this.listeners.push(listener);
  }
}

/** The certificate's end of validity in ms, when a certificate (not only a thumbprint) is configured. */
export function certificateNotAfterMs(credentials: LoadedCredentials): number | undefined {
  return credentials.certificate ? Date.parse(credentials.certificate.validTo) : undefined;
}

/** Whole days left until `notAfterMs` (negative once past), rounded down. */
export function daysLeft(notAfterMs: number, nowMs: number): number {
  return Math.floor((notAfterMs - nowMs) / DAY_MS);
}

export { DAY_MS };
