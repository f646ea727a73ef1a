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
  private readonly listeners: ((active: ActiveCredentials) => void)[] = [];

  constructor(machineId: string, credentials: LoadedCredentials, nowMs: number) {
    this.#active = { machineId, credentials, activatedAtMs: nowMs };
  }

  get active(): ActiveCredentials {
    return this.#active;
  }

  /**
   * Puts `credentials` in use. The key they replace is closed (a PKCS#11 key ends its sessions once the signatures
   * in flight finish), unless the new pair keeps the same key.
   */
  swap(machineId: string, credentials: LoadedCredentials, nowMs: number): void {
    const previous = this.#active.credentials.key;
    this.#active = { machineId, credentials, activatedAtMs: nowMs };
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
