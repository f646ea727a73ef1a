import { resolve } from 'node:path';
import { CONTROL_PATH } from '../../testing/emulator/emulator.control.js';
import { DEFAULT_INTEGRATION, integrationName } from '../../options/integration-name.util.js';
import { isLoopbackHost } from '../../util/loopback.util.js';
import { CommandFailure, UsageError, stringOption, type Command, type CommandContext } from '../cli.command.js';
import { emulatorDisplayName, readCertificatePem } from './emulator-registration.js';
import { readEmulatorState } from './emulator-state.js';

export const emulatorUploadCommand: Command = {
  name: 'emulator upload',
  synopsis: '--certificate FILE [--integration NAME] (--url URL | --state FILE)',
  description: [
    "Replaces an integration's certificate in a running 'platform-auth emulator', as the portal's upload does: from",
    'then on the emulator refuses assertions signed with the previous key as not registered. The rotation runbook',
    '(docs/operations.md), rehearsed locally. The emulator is found at --url, or at the address its --state FILE',
    "keeps; the upload is kept in that state. Uses the emulator's control endpoint, which answers only on loopback.",
  ].join('\n'),
  options: {
    certificate: {
      type: 'string',
      placeholder: 'FILE',
      description: 'the certificate to register (next-publickey.cer from keygen --next, PEM or DER)',
    },
    integration: {
      type: 'string',
      placeholder: 'NAME',
      description: `the integration whose certificate is replaced; default '${DEFAULT_INTEGRATION}'`,
    },
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
  },
  run,
};

/** Bounds one control request: the emulator is on this machine and answers at once, or not at all. */
const CONTROL_TIMEOUT_MS = 5_000;

interface ListedIntegration {
  readonly machineId: string;
  readonly name: string;
  readonly thumbprint: string;
}

async function run(context: CommandContext): Promise<number> {
  const name = stringOption(context, 'integration') ?? DEFAULT_INTEGRATION;
  if (name !== DEFAULT_INTEGRATION) {
    try {
      integrationName(name);
    } catch {
      throw new UsageError(`--integration takes a name as the emulator printed it ('billing'), got '${name}'`);
    }
  }
  const file = stringOption(context, 'certificate');
  if (file === undefined) throw new UsageError("'emulator upload' needs --certificate FILE");
  const url = emulatorUrl(context);
  const certificatePath = resolve(context.cwd, file);
  const certificatePem = readCertificatePem(certificatePath, `--certificate '${certificatePath}'`);

  const listed = await control<{ integrations: ListedIntegration[] }>(url, '/integrations', { method: 'GET' });
  const displayName = emulatorDisplayName(name);
  const target = listed.integrations.find((integration) => integration.name === displayName);
  if (!target) {
    const names = listed.integrations.map((integration) => `'${integration.name}'`).join(', ');
    throw new CommandFailure(`the emulator at ${url} has no integration '${name}'; it has ${names}`);
  }
  const { integration } = await control<{ integration: ListedIntegration }>(
    url,
    `/integrations/${encodeURIComponent(target.machineId)}/certificate`,
    { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ certificatePem }) },
  );

  const out = context.out;
  if (out.json) {
    out.printJson({
      ok: true,
      url,
      integration: name,
      machineId: integration.machineId,
      thumbprint: integration.thumbprint,
      previousThumbprint: target.thumbprint,
      certificatePath,
    });
    return 0;
  }
  const unchanged = integration.thumbprint === target.thumbprint;
  out.print(
    `${out.style.ok('✓')} ${unchanged ? 'Registered again' : 'Uploaded'} ${certificatePath} to '${name}' (machineId ${integration.machineId}) on ${url}.`,
  );
  out.print(
    unchanged
      ? `  thumbprint ${integration.thumbprint}: the integration held this certificate already; nothing changes.`
      : `  thumbprint ${target.thumbprint} → ${integration.thumbprint}: assertions signed with the previous key are now refused as not registered; a next pair switches within its exchange.`,
  );
  return 0;
}

/** `--url`, or the address `--state` keeps; one of the two, and on loopback, where the controls answer. */
function emulatorUrl(context: CommandContext): string {
  const given = stringOption(context, 'url');
  const statePath = stringOption(context, 'state');
  if ((given === undefined) === (statePath === undefined)) {
    throw new UsageError("'emulator upload' needs either --url URL or --state FILE, to find the emulator");
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

async function control<T>(url: string, path: string, init: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(url + CONTROL_PATH + path, { ...init, signal: AbortSignal.timeout(CONTROL_TIMEOUT_MS) });
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new CommandFailure(
      `no emulator answers at ${url} (${code}): is 'platform-auth emulator' running there? Give the address it printed`,
    );
  }
  const body = (await response.json().catch(() => undefined)) as (T & { message?: string }) | undefined;
  if (response.ok && body) return body;
  if (response.status === 404 && path === '/integrations') {
    throw new CommandFailure(
      `${url} has no emulator controls: start it with 'platform-auth emulator' (an emulator started in code needs control: true)`,
    );
  }
  throw new CommandFailure(
    `the emulator refused the upload (HTTP ${response.status}): ${body?.message ?? 'no reason given'}`,
  );
}
