import { resolve } from 'node:path';
import { PlatformEmulator } from '../../testing/emulator/platform.emulator.js';
import type { PlatformEmulatorOptions } from '../../testing/emulator/emulator.types.js';
import {
  CommandFailure,
  UsageError,
  flag,
  integerOption,
  stringOption,
  type Command,
  type CommandContext,
} from '../cli.command.js';
import { DEFAULT_INTEGRATION } from '../../options/integration-name.util.js';
import { register, type IntegrationRequest, type Registration } from './emulator-registration.js';
import { registerIntegrationsFile } from './emulator-integrations-file.js';
import { report } from './emulator-report.js';
import { readEmulatorState, writeEmulatorState, type EmulatorState } from './emulator-state.js';
import { userClientOption } from './user-client-option.util.js';
import { namedIntegrations, withState } from './emulator-requests.js';
import { EMULATOR_SUBCOMMANDS } from './emulator-subcommands.js';

export const emulatorCommand: Command = {
  name: 'emulator',
  synopsis:
    '[--certificate FILE] [--machine-id ID] [--integration NAME[=FILE]]… [--tenant ID[=FILE]]… [--integrations-file FILE] [--port N] [--state FILE] [--clock-offset SECONDS] [--token-lifetime SECONDS] [--leeway SECONDS] [--user-client ID=URI[,URI…]] [--no-inspector]',
  description: [
    'Runs the platform emulator of nestjs-platform-auth/testing on 127.0.0.1 and prints the PLATFORM_* variables that',
    'point an application at it. With --certificate, the certificate you made with keygen is registered as the system',
    'integration (your private key never leaves your machine); without it, a throwaway key is made in memory and its',
    'PEM values are printed on one line with literal \\n, which the module accepts. Each --integration registers a named',
    'integration beside it, printed with its PLATFORM_<NAME>_ variables. Runs until Ctrl+C (SIGINT) or SIGTERM, then',
    'closes every connection and exits 0. A development tool: plain HTTP on loopback, everything in memory unless',
    '--state FILE keeps the port, the integrations, their machineIds and certificates (never a private key) across',
    "restarts, so an .env stays valid. A running emulator takes commands: 'emulator upload' (the portal's upload: a",
    "rotation rehearsed), 'emulator add', 'emulator fault' and 'emulator reset'; each has --help.",
    '--integrations-file registers thousands of integrations at once (one per tenant of PlatformAuthModule.forTenants).',
  ].join('\n'),
  subcommands: EMULATOR_SUBCOMMANDS,
  options: {
    certificate: {
      type: 'string',
      placeholder: 'FILE',
      description: 'register this certificate (publickey.cer from keygen, PEM or DER) instead of a throwaway one',
    },
    'machine-id': {
      type: 'string',
      placeholder: 'ID',
      description: 'the machineId of the registered integration; default: a new UUID, as the portal assigns',
    },
    integration: {
      type: 'string',
      multiple: true,
      placeholder: 'NAME[=FILE]',
      description:
        'also registers the named integration NAME (forRoot({ name })), with a throwaway key or the certificate FILE; repeatable',
    },
    tenant: {
      type: 'string',
      multiple: true,
      placeholder: 'ID[=FILE]',
      description:
        "also registers an integration for the tenant ID of forTenants, printed as the tenant's settings (JSON, what resolve returns); repeatable",
    },
    'integrations-file': {
      type: 'string',
      placeholder: 'FILE',
      description:
        'also registers every integration of FILE, a JSON array of { certificatePem | certificateFile, machineId?, name?, status? }, all or none; not kept by --state',
    },
    port: {
      type: 'string',
      placeholder: 'N',
      description: 'port to listen on, 0 to 65535; default 0, a free port chosen by the system',
    },
    state: {
      type: 'string',
      placeholder: 'FILE',
      description:
        'keep the port, integrations, machineIds and certificates in FILE (JSON, mode 0600, no private key) across restarts; created when missing',
    },
    'clock-offset': {
      type: 'string',
      placeholder: 'SECONDS',
      description: "the emulator's clock against this machine's, e.g. -3 or 1.5 (behind is negative); default 0",
    },
    'token-lifetime': {
      type: 'string',
      placeholder: 'SECONDS',
      description: 'expires_in of issued access tokens, 1 to 86400; default 600, as the platform',
    },
    leeway: {
      type: 'string',
      placeholder: 'SECONDS',
      description: 'tolerance on the assertion nbf and exp; default 0, strict (the platform publishes none)',
    },
    'user-client': {
      type: 'string',
      placeholder: 'ID=URI[,URI…]',
      description: 'registers a public client for user sign-in with these exact redirect URIs',
    },
    'no-inspector': {
      type: 'boolean',
      description: 'do not serve the inspector page at /_emulator/ (every exchange with a verdict per rule)',
    },
  },
  run,
};

interface EmulatorSettings {
  readonly port: number;
  readonly userClient: ReturnType<typeof userClientOption>;
  readonly emulatorOptions: PlatformEmulatorOptions;
  /** The default integration first, then the named ones in the order given. */
  readonly integrations: readonly IntegrationRequest[];
  /** `--integrations-file FILE`, resolved. */
  readonly integrationsFile?: string;
  /** `--state FILE`, resolved, and what it held when the emulator started. */
  readonly statePath?: string;
  readonly state?: EmulatorState;
}

async function run(context: CommandContext): Promise<number> {
  const settings = readSettings(context);
  const { statePath } = settings;
  // Set once every integration is registered: what --state keeps, rewritten after each upload (control or inspector).
  let kept: EmulatorState | undefined;
  const emulator = await start(settings, (integration, certificatePem) => {
    if (!kept || statePath === undefined) return;
    const integrations = kept.integrations.map((entry) =>
      entry.machineId === integration.machineId ? { ...entry, certificatePem } : entry,
    );
    kept = { ...kept, integrations };
    try {
      writeEmulatorState(statePath, kept);
    } catch (error) {
      context.out.error(`${(error as Error).message}; the emulator goes on with the upload in memory only`);
    }
  });
  try {
    const registrations: Registration[] = [];
    for (const request of settings.integrations) registrations.push(await register(emulator, request));
    const bulk =
      settings.integrationsFile === undefined
        ? undefined
        : registerIntegrationsFile(emulator, settings.integrationsFile);
    const userClient = settings.userClient;
    if (userClient) {
      emulator.registerUserClient(userClient);
      registrations[0].env.PLATFORM_USER_CLIENT_ID = userClient.clientId;
      registrations[0].env.PLATFORM_USER_REDIRECT_URI = userClient.redirectUris[0];
    }
    if (statePath !== undefined) {
      kept = stateOf(emulator, registrations);
      writeEmulatorState(statePath, kept);
    }
    report(context, emulator, settings, registrations, bulk);
    const signal = await context.untilStopped();
    await emulator.close();
    context.out.note(`${signal}: emulator closed.`);
    return 0;
  } finally {
    await emulator.close();
  }
}

function stateOf(emulator: PlatformEmulator, registrations: readonly Registration[]): EmulatorState {
  return {
    version: 1,
    url: emulator.url,
    port: Number(new URL(emulator.url).port),
    integrations: registrations.map((registration) => ({
      name: registration.integration,
      machineId: registration.machineId,
      certificatePem: registration.certificatePem,
      certificatePath: registration.certificatePath,
      ...(registration.tenant ? { tenant: true } : {}),
    })),
  };
}

function readSettings(context: CommandContext): EmulatorSettings {
  const rawState = stringOption(context, 'state');
  const statePath = rawState === undefined ? undefined : resolve(context.cwd, rawState);
  const state = statePath === undefined ? undefined : readEmulatorState(statePath);
  const port = integerOption(context, 'port', { min: 0, max: 65535, fallback: state?.port ?? 0 });
  const tokenLifetimeSeconds = integerOption(context, 'token-lifetime', { min: 1, max: 86_400, fallback: 600 });
  const clockOffsetSeconds = decimalOption(context, 'clock-offset', { min: -86_400, max: 86_400 }) ?? 0;
  const leewaySeconds = decimalOption(context, 'leeway', { min: 0, max: 3_600 }) ?? 0;
  const machineId = stringOption(context, 'machine-id');
  if (machineId !== undefined && machineId.trim() === '') throw new UsageError('--machine-id must not be empty');
  const certificate = stringOption(context, 'certificate');
  const integrationsFile = stringOption(context, 'integrations-file');
  const requested: IntegrationRequest[] = [
    {
      name: DEFAULT_INTEGRATION,
      certificatePath: certificate === undefined ? undefined : resolve(context.cwd, certificate),
      machineId,
    },
    ...namedIntegrations(context),
  ];
  return {
    port,
    userClient: userClientOption(context),
    emulatorOptions: {
      port,
      tokenLifetimeSeconds,
      clockOffsetMs: clockOffsetSeconds * 1000,
      leewaySeconds,
      inspector: !flag(context, 'no-inspector'),
      control: true,
    },
    integrations: state ? withState(requested, state) : requested,
    integrationsFile: integrationsFile === undefined ? undefined : resolve(context.cwd, integrationsFile),
    statePath,
    state,
  };
}

/** A number of seconds, fractions and a sign allowed: `-0.5` is a realistic clock offset. */
function decimalOption(context: CommandContext, name: string, range: { min: number; max: number }): number | undefined {
  const raw = stringOption(context, name);
  if (raw === undefined) return undefined;
  const value = /^[+-]?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!(value >= range.min && value <= range.max)) {
    throw new UsageError(`--${name} must be a number of seconds from ${range.min} to ${range.max}, got '${raw}'`);
  }
  return value === 0 ? 0 : value;
}

async function start(
  settings: EmulatorSettings,
  onCertificateReplaced: PlatformEmulatorOptions['onCertificateReplaced'],
): Promise<PlatformEmulator> {
  try {
    return await PlatformEmulator.start({ ...settings.emulatorOptions, onCertificateReplaced });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const port = settings.port;
    const kept = settings.state?.port === port ? ` (kept by --state '${settings.statePath}')` : '';
    if (code === 'EADDRINUSE')
      throw new CommandFailure(
        kept
          ? `port ${port}${kept} on 127.0.0.1 is in use: is an emulator with this state running already? Otherwise stop what holds the port, or give --port (the .env then needs the new PLATFORM_BASE_URL)`
          : `port ${port} on 127.0.0.1 is in use; choose another --port, or leave it out for a free one`,
      );
    if (code === 'EACCES') throw new CommandFailure(`port ${port} needs privileges; choose a port above 1023`);
    throw error;
  }
}
