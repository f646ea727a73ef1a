import type { LoadedCredentials } from './credentials.loader.js';

/** The credentials assertions are signed with right now, and whose they are. */
export interface ActiveCredentials {
  readonly machineId: string;
  readonly credentials: LoadedCredentials;
  /** When this pair was put in use (start-up, a reload, a rotation or a switch), by the module's clock. */
  readonly activatedAtMs: number;
}

/**
 * Where a signer or a monitor reads the pair in use, at each use: one read gives a matching key, certificate
 * thumbprint and machineId, whatever changes the pair meanwhile. The credential lifecycle is the one writer.
 */
export interface CredentialsInUse {
  readonly active: ActiveCredentials;
}

/**
 * What the file reloader hands the credential lifecycle: pairs read from changed files that passed every start-up
 * check. Each answer is `undefined` when the pair was taken, or why it was not (settings and thumbprints only).
 */
export interface ReloadedPairs extends CredentialsInUse {
  readonly next: LoadedCredentials | undefined;
  /** The current pair's files changed. */
  reloaded(pair: LoadedCredentials): string | undefined;
  /** The next pair's files changed; `undefined`: they were removed. */
  nextReloaded(pair: LoadedCredentials | undefined): string | undefined;
}

/** The certificate's end of validity in ms, when a certificate (not only a thumbprint) is configured. */
export function certificateNotAfterMs(credentials: LoadedCredentials): number | undefined {
  return credentials.certificate ? Date.parse(credentials.certificate.validTo) : undefined;
}
