import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PlatformEmulator } from '../../testing/emulator/platform.emulator.js';
import type { PlatformEmulatorOptions } from '../../testing/emulator/emulator.types.js';
import { parseCertificateFile } from '../certificate-info.util.js';
import {
  CommandFailure,
  UsageError,
  describeFsError,
  flag,
  integerOption,
  stringOption,
  type Command,
  type CommandContext,
} from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { userClientOption } from './user-client-option.util.js';

export const emulatorCommand: Command = {
  name: 'emulator',
  synopsis:
    '[--certificate FILE] [--machine-id ID] [--port N] [--clock-offset SECONDS] [--token-lifetime SECONDS] [--leeway SECONDS] [--user-client ID=URI[,URI…]] [--no-inspector]',
  description: [
    'Runs the platform emulator of nestjs-platform-auth/testing on 127.0.0.1 and prints the PLATFORM_* variables that',
    'point an application at it. With --certificate, the certificate you made with keygen is registered as the system',
    'integration (your private key never leaves your machine); without it, a throwaway key is made in memory and its',
    'PEM values are printed on one line with literal \\n, which the module accepts. Runs until Ctrl+C (SIGINT) or',
    'SIGTERM, then closes every connection and exits 0. A development tool: plain HTTP on loopback, everything in memory.',
  ].join('\n'),
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
    port: {
      type: 'string',
      placeholder: 'N',
      description: 'port to listen on, 0 to 65535; default 0, a free port chosen by the system',
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

const INTEGRATION_NAME = 'platform-auth emulator';
/** What keygen writes beside publickey.cer; printed as the key path when it is there. */
const KEYGEN_PRIVATE_KEY_FILE = 'private-key.pem';

interface EmulatorSettings {
  readonly port: number;
  readonly userClient: ReturnType<typeof userClientOption>;
  readonly emulatorOptions: PlatformEmulatorOptions;
  readonly certificatePath?: string;
  readonly machineId?: string;
}

/** The integration the emulator serves and the variables an app needs for it. */
interface Registration {
  readonly machineId: string;
  readonly thumbprint: string;
  readonly status: string;
  readonly permissions: readonly string[];
  readonly source: string;
  readonly env: Record<string, string>;
  readonly notes: readonly string[];
}

async function run(context: CommandContext): Promise<number> {
  const settings = readSettings(context);
  const emulator = await start(settings);
  try {
    const registration = await register(emulator, settings);
    const userClient = settings.userClient;
    if (userClient) {
      emulator.registerUserClient(userClient);
      registration.env.PLATFORM_USER_CLIENT_ID = userClient.clientId;
      registration.env.PLATFORM_USER_REDIRECT_URI = userClient.redirectUris[0];
    }
    report(context, emulator, settings, registration);
    const signal = await context.untilStopped();
    await emulator.close();
    context.out.note(`${signal}: emulator closed.`);
    return 0;
  } finally {
    await emulator.close();
  }
}

function readSettings(context: CommandContext): EmulatorSettings {
  const port = integerOption(context, 'port', { min: 0, max: 65535, fallback: 0 });
  const tokenLifetimeSeconds = integerOption(context, 'token-lifetime', { min: 1, max: 86_400, fallback: 600 });
  const clockOffsetSeconds = decimalOption(context, 'clock-offset', { min: -86_400, max: 86_400 }) ?? 0;
  const leewaySeconds = decimalOption(context, 'leeway', { min: 0, max: 3_600 }) ?? 0;
  const machineId = stringOption(context, 'machine-id');
  if (machineId !== undefined && machineId.trim() === '') throw new UsageError('--machine-id must not be empty');
  const certificate = stringOption(context, 'certificate');
  return {
    port,
    userClient: userClientOption(context),
    emulatorOptions: {
      port,
      tokenLifetimeSeconds,
      clockOffsetMs: clockOffsetSeconds * 1000,
      leewaySeconds,
      inspector: !flag(context, 'no-inspector'),
    },
    certificatePath: certificate === undefined ? undefined : resolve(context.cwd, certificate),
    machineId,
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

async function start(settings: EmulatorSettings): Promise<PlatformEmulator> {
  try {
    return await PlatformEmulator.start(settings.emulatorOptions);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const port = settings.port;
    if (code === 'EADDRINUSE')
      throw new CommandFailure(
        `port ${port} on 127.0.0.1 is in use; choose another --port, or leave it out for a free one`,
      );
    if (code === 'EACCES') throw new CommandFailure(`port ${port} needs privileges; choose a port above 1023`);
    throw error;
  }
}

async function register(emulator: PlatformEmulator, settings: EmulatorSettings): Promise<Registration> {
  const machineId = settings.machineId;
  if (settings.certificatePath === undefined) {
    const integration = await emulator.createIntegration({ name: INTEGRATION_NAME, machineId });
    return {
      machineId: integration.machineId,
      thumbprint: integration.thumbprint,
      status: integration.status,
      permissions: integration.permissions,
      source: 'a throwaway key and certificate made in memory',
      env: Object.fromEntries(Object.entries(integration.env).map(([name, value]) => [name, singleLine(value)])),
      notes: ['The key is a throwaway that only this emulator accepts.'],
    };
  }
  const path = settings.certificatePath;
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new CommandFailure(`cannot read --certificate '${path}': ${describeFsError(error)}`);
  }
  const { certificate } = parseCertificateFile(content, `--certificate '${path}'`);
  let integration;
  try {
    integration = emulator.registerIntegration({
      name: INTEGRATION_NAME,
      certificatePem: certificate.toString(),
      machineId,
    });
  } catch (error) {
    throw new CommandFailure(`cannot register --certificate '${path}': ${(error as Error).message}`);
  }
  const keyPath = join(dirname(path), KEYGEN_PRIVATE_KEY_FILE);
  const hasKeygenKey = existsSync(keyPath);
  const env: Record<string, string> = {
    PLATFORM_BASE_URL: emulator.url,
    PLATFORM_MACHINE_ID: integration.machineId,
    PLATFORM_PRIVATE_KEY_PATH: hasKeygenKey ? keyPath : '<the private key this certificate was made from>',
    PLATFORM_CERTIFICATE_PATH: path,
  };
  if (emulator.audience !== new URL(emulator.url).host) env.PLATFORM_AUDIENCE = emulator.audience;
  return {
    machineId: integration.machineId,
    thumbprint: integration.thumbprint,
    status: integration.status,
    permissions: integration.permissions,
    source: path,
    env,
    notes: hasKeygenKey
      ? [`The private key is ${keyPath}, found beside the certificate; it is read by your app, never by the emulator.`]
      : ['Set PLATFORM_PRIVATE_KEY_PATH to the private key the certificate was made from.'],
  };
}

function report(
  context: CommandContext,
  emulator: PlatformEmulator,
  settings: EmulatorSettings,
  registration: Registration,
): void {
  const out = context.out;
  const { clockOffsetMs = 0, tokenLifetimeSeconds, leewaySeconds = 0 } = settings.emulatorOptions;
  if (out.json) {
    out.printJson({
      url: emulator.url,
      tokenUrl: emulator.tokenUrl,
      audience: emulator.audience,
      inspectorUrl: emulator.inspectorUrl,
      clockOffsetSeconds: clockOffsetMs / 1000,
      tokenLifetimeSeconds,
      leewaySeconds,
      integration: {
        name: INTEGRATION_NAME,
        machineId: registration.machineId,
        thumbprint: registration.thumbprint,
        status: registration.status,
        permissions: registration.permissions,
        certificate: registration.source,
      },
      userSignIn: settings.userClient ? { authorizeUrl: emulator.authorizeUrl, ...settings.userClient } : undefined,
      env: registration.env,
    });
    return;
  }
  out.print(`Platform emulator listening on ${out.style.bold(emulator.url)}`);
  if (emulator.inspectorUrl) out.print(`Inspector: ${out.style.bold(emulator.inspectorUrl)}`);
  const fields: Array<[string, string]> = [
    ['token endpoint', emulator.tokenUrl],
    ['audience', emulator.audience],
    ['integration', `"${INTEGRATION_NAME}", ${registration.status}`],
    ['machineId', registration.machineId],
    ['thumbprint', `${registration.thumbprint} (SHA-1, the assertion's iss)`],
    ['certificate', registration.source],
    ['permissions', registration.permissions.join(', ')],
    ['clock', clockOffsetMs === 0 ? 'this machine’s' : `${clockOffsetMs / 1000} s against this machine’s`],
    ['token lifetime', `${tokenLifetimeSeconds} s`],
    ['leeway', leewaySeconds === 0 ? 'none (strict nbf and exp)' : `${leewaySeconds} s`],
    ['placeholder API', 'POST /api/messages, GET /api/billing (placeholders: the real paths are not published)'],
  ];
  if (settings.userClient)
    fields.push(['user sign-in', `${emulator.authorizeUrl}, client ${settings.userClient.clientId}, GET /api/me`]);
  printFields(out, fields, '  ');
  out.print();
  for (const note of registration.notes) out.print(note);
  out.print('Point an application or the CLI at it; paste into a shell or a .env file:');
  out.print();
  for (const [name, value] of Object.entries(registration.env)) out.print(`export ${name}=${shellQuote(value)}`);
  out.print();
  out.print(
    "Then, in another terminal: 'npx platform-auth doctor' checks everything, 'npx platform-auth token' exchanges.",
  );
  out.print('Running until Ctrl+C (SIGINT) or SIGTERM.');
}

/** One line per variable, so the values survive copy and paste into `.env` files and CI secrets. */
function singleLine(value: string): string {
  return value.trim().replace(/\r?\n/g, '\\n');
}

/** Single quotes keep `\n` literal in shells and in dotenv files alike. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
