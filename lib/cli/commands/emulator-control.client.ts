import { resolve } from 'node:path';
import { CONTROL_PATH } from '../../testing/emulator/emulator.control.js';
import { isLoopbackHost } from '../../util/loopback.util.js';
import { sanitizeRemoteText } from '../../util/remote-text.util.js';
import { CommandFailure, UsageError, stringOption, type CommandContext, type OptionSpec } from '../cli.command.js';
import { readEmulatorState } from './emulator-state.js';

/** Bounds one control request: the emulator is on this machine and answers at once, or not at all. */
const CONTROL_TIMEOUT_MS = 5_000;

/** `--url URL` and `--state FILE`: how every command that drives a running emulator finds it. */
export const EMULATOR_ADDRESS_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  url: {
    type: 'string',
    placeholder: 'URL',
    description: "the emulator's address as it printed it, e.g. http://127.0.0.1:4010",
  },
  state: {
    type: 'string',
    placeholder: 'FILE',
    description: 'the --state FILE the emulator runs with: its address is read from there',
  },
};

/** `--url`, or the address `--state` keeps; one of the two, and on loopback, where the controls answer. */
export function emulatorUrl(context: CommandContext, command: string): string {
  const given = stringOption(context, 'url');
  const statePath = stringOption(context, 'state');
  if ((given === undefined) === (statePath === undefined)) {
    throw new UsageError(`'${command}' needs either --url URL or --state FILE, to find the emulator`);
  }
  let raw = given;
  if (statePath !== undefined) {
    const path = resolve(context.cwd, statePath);
    const state = readEmulatorState(path);
    if (!state)
      throw new CommandFailure(`--state '${path}' does not exist: start 'platform-auth emulator --state' first`);
    raw = state.url;
  }
  let url: URL;
  try {
    url = new URL(raw!);
  } catch {
    throw new UsageError(`--url must be the emulator's address, e.g. http://127.0.0.1:4010, got '${raw}'`);
  }
  if (url.protocol !== 'http:' || !isLoopbackHost(url.hostname)) {
    throw new UsageError(
      `--url must be an http:// address on this machine (the emulator's controls answer on loopback only), got '${raw}'`,
    );
  }
  return url.origin;
}

/**
 * One request to the control endpoint of the emulator at `url`; its JSON answer, or a failure that says what the
 * emulator refused (`action`: 'the upload') and why.
 */
export async function control<T>(url: string, path: string, init: RequestInit, action: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch(url + CONTROL_PATH + path, { ...init, signal: AbortSignal.timeout(CONTROL_TIMEOUT_MS) });
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new CommandFailure(
      `no emulator answers at ${url} (${code}): is 'platform-auth emulator' running there? Give the address it printed`,
    );
  }
  const body = (await response.json().catch(() => undefined)) as (T & { error?: string; message?: string }) | undefined;
  if (response.ok && body) return body;
  // Any other 404 comes from a server without these controls: an emulator started in code, or not an emulator.
  if (response.status === 404 && body?.error !== 'unknown_integration') {
    throw new CommandFailure(
      `${url} has no emulator controls: start it with 'platform-auth emulator' (an emulator started in code needs control: true)`,
    );
  }
  throw new CommandFailure(
    `the emulator refused ${action} (HTTP ${response.status}): ${sanitizeRemoteText(body?.message) ?? 'no reason given'}`,
  );
}

/** `init` for a control request with a JSON body. */
export function jsonRequest(method: 'POST' | 'PUT', body: unknown): RequestInit {
  return { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
