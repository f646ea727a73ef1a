import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CommandFailure, describeFsError } from '../cli.command.js';

/**
 * What `platform-auth emulator --state FILE` keeps across restarts so that an `.env` stays valid: the address and
 * every integration with its machineId and the certificate the portal holds. Public material only: the state never
 * holds a private key, so a throwaway key printed once is kept by the user, not by the file.
 */
export interface EmulatorState {
  readonly version: 1;
  readonly url: string;
  readonly port: number;
  readonly integrations: readonly EmulatorStateIntegration[];
}

interface EmulatorStateIntegration {
  /** `default`, or the name of a named integration (`--integration NAME`). */
  readonly name: string;
  readonly machineId: string;
  readonly certificatePem: string;
  /** The certificate file it was registered from, when it was (`--certificate`, `--integration NAME=FILE`). */
  readonly certificatePath?: string;
  /** Registered with `--tenant`. */
  readonly tenant?: boolean;
}

/** The state in `path`, or undefined when there is no file yet (the first start writes it). */
export function readEmulatorState(path: string): EmulatorState | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CommandFailure(`cannot read --state '${path}': ${describeFsError(error)}`);
  }
  const problem = (what: string) =>
    new CommandFailure(
      `--state '${path}' is not an emulator state file (${what}); give another path, or remove it to start afresh`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw problem('not JSON');
  }
  const state = parsed as Partial<EmulatorState> | null;
  if (state?.version !== 1) throw problem('no "version": 1');
  if (typeof state.url !== 'string' || !Number.isInteger(state.port)) throw problem('no url and port');
  if (!Array.isArray(state.integrations)) throw problem('no integrations');
  for (const entry of state.integrations as unknown[]) {
    const integration = entry as Partial<EmulatorStateIntegration> | null;
    const valid =
      typeof integration?.name === 'string' &&
      typeof integration.machineId === 'string' &&
      typeof integration.certificatePem === 'string' &&
      (integration.certificatePath === undefined || typeof integration.certificatePath === 'string') &&
      (integration.tenant === undefined || typeof integration.tenant === 'boolean');
    if (!valid) throw problem('an integration without name, machineId or certificatePem');
  }
  return state as EmulatorState;
}

/**
 * Replaces the file at once, never leaving half a state: the text goes to a new file beside it (mode 0600: it
 * names the integrations of this machine), which is then renamed over the old one.
 */
export function writeEmulatorState(path: string, state: EmulatorState): void {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new CommandFailure(`cannot write --state '${path}': ${describeFsError(error)}`);
  }
}
