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
  stringOptions,
  type Command,
  type CommandContext,
} from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { DEFAULT_INTEGRATION, integrationEnvName, integrationName } from '../../options/integration-name.util.js';
import { userClientOption } from './user-client-option.util.js';

export const emulatorCommand: Command = {
  name: 'emulator',
  synopsis:
    '[--certificate FILE] [--machine-id ID] [--integration NAME[=FILE]]… [--port N] [--clock-offset SECONDS] [--token-lifetime SECONDS] [--leeway SECONDS] [--user-client ID=URI[,URI…]] [--no-inspector]',
  description: [
    'Runs the platform emulator of nestjs-platform-auth/testing on 127.0.0.1 and prints the PLATFORM_* variables that',
    'point an application at it. With --certificate, the certificate you made with keygen is registered as the system',
    'integration (your private key never leaves your machine); without it, a throwaway key is made in memory and its',
    'PEM values are printed on one line with literal \\n, which the module accepts. Each --integration registers a named',
    'integration beside it, printed with its PLATFORM_<NAME>_ variables. Runs until Ctrl+C (SIGINT) or SIGTERM, then',
    'closes every connection and exits 0. A development tool: plain HTTP on loopback, everything in memory.',
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
    integration: {
      type: 'string',
      multiple: true,
      placeholder: 'NAME[=FILE]',
      description:
        'also registers the named integration NAME (forRoot({ name })), with a throwaway key or the certificate FILE; repeatable',
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
const THROWAWAY_NOTE = 'The key is a throwaway that only this emulator accepts.';
/** What keygen writes beside publickey.cer; printed as the key path when it is there. */
const KEYGEN_PRIVATE_KEY_FILE = 'private-key.pem';

/** One integration to register: the default one (`--certificate`, `--machine-id`) or a named one (`--integration`). */
interface IntegrationRequest {
  /** `default`, or the name of a named integration. */
  readonly name: string;
  readonly certificatePath?: string;
  readonly machineId?: string;
}

interface EmulatorSettings {
  readonly port: number;
  readonly userClient: ReturnType<typeof userClientOption>;
  readonly emulatorOptions: PlatformEmulatorOptions;
  /** The default integration first, then the named ones in the order given. */
  readonly integrations: readonly IntegrationRequest[];
}

/** An integration the emulator serves and the variables an app needs for it (`PLATFORM_<NAME>_…` for a named one). */
interface Registration {
  readonly integration: string;
  /** How the emulator lists it. */
  readonly displayName: string;
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
    const registrations: Registration[] = [];
    for (const request of settings.integrations) registrations.push(await register(emulator, request));
    const userClient = settings.userClient;
    if (userClient) {
      emulator.registerUserClient(userClient);
      registrations[0].env.PLATFORM_USER_CLIENT_ID = userClient.clientId;
      registrations[0].env.PLATFORM_USER_REDIRECT_URI = userClient.redirectUris[0];
    }
    report(context, emulator, settings, registrations);
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
    integrations: [
      {
        name: DEFAULT_INTEGRATION,
        certificatePath: certificate === undefined ? undefined : resolve(context.cwd, certificate),
        machineId,
      },
      ...namedIntegrations(context),
    ],
  };
}

/** `--integration NAME[=FILE]`, each NAME a valid integration name, given once. */
function namedIntegrations(context: CommandContext): IntegrationRequest[] {
  const requests: IntegrationRequest[] = [];
  for (const raw of stringOptions(context, 'integration')) {
    const separator = raw.indexOf('=');
    const name = (separator < 0 ? raw : raw.slice(0, separator)).trim();
    const file = separator < 0 ? undefined : raw.slice(separator + 1).trim();
    try {
      integrationName(name);
    } catch {
      throw new UsageError(
        `--integration takes NAME[=FILE], NAME lower-case letters, digits, '-' or '_', starting with a letter (at most 40), got '${raw}'`,
      );
    }
    if (name === DEFAULT_INTEGRATION)
      throw new UsageError("--integration: 'default' is the integration the emulator always registers; name another");
    if (file === '') throw new UsageError(`--integration ${name}= needs a certificate file after '='`);
    if (requests.some((request) => request.name === name))
      throw new UsageError(`--integration: '${name}' is given more than once`);
    requests.push({ name, certificatePath: file === undefined ? undefined : resolve(context.cwd, file) });
  }
  return requests;
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

async function register(emulator: PlatformEmulator, request: IntegrationRequest): Promise<Registration> {
  const { machineId, name } = request;
  const displayName = name === DEFAULT_INTEGRATION ? INTEGRATION_NAME : `${INTEGRATION_NAME} (${name})`;
  const variable = (base: string) => integrationEnvName(base, name);
  if (request.certificatePath === undefined) {
    const integration = await emulator.createIntegration({ name: displayName, machineId });
    return {
      integration: name,
      displayName,
      machineId: integration.machineId,
      thumbprint: integration.thumbprint,
      status: integration.status,
      permissions: integration.permissions,
      source: 'a throwaway key and certificate made in memory',
      env: Object.fromEntries(
        Object.entries(integration.env).map(([base, value]) => [variable(base), singleLine(value)]),
      ),
      notes: [THROWAWAY_NOTE],
    };
  }
  const path = request.certificatePath;
  const source = name === DEFAULT_INTEGRATION ? `--certificate '${path}'` : `--integration ${name}='${path}'`;
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new CommandFailure(`cannot read ${source}: ${describeFsError(error)}`);
  }
  const { certificate } = parseCertificateFile(content, source);
  let integration;
  try {
    integration = emulator.registerIntegration({
      name: displayName,
      certificatePem: certificate.toString(),
      machineId,
    });
  } catch (error) {
    throw new CommandFailure(`cannot register ${source}: ${(error as Error).message}`);
  }
  const keyPath = join(dirname(path), KEYGEN_PRIVATE_KEY_FILE);
  const hasKeygenKey = existsSync(keyPath);
  const env: Record<string, string> = {
    [variable('PLATFORM_BASE_URL')]: emulator.url,
    [variable('PLATFORM_MACHINE_ID')]: integration.machineId,
    [variable('PLATFORM_PRIVATE_KEY_PATH')]: hasKeygenKey
      ? keyPath
      : '<the private key this certificate was made from>',
    [variable('PLATFORM_CERTIFICATE_PATH')]: path,
  };
  if (emulator.audience !== new URL(emulator.url).host) env[variable('PLATFORM_AUDIENCE')] = emulator.audience;
  return {
    integration: name,
    displayName,
    machineId: integration.machineId,
    thumbprint: integration.thumbprint,
    status: integration.status,
    permissions: integration.permissions,
    source: path,
    env,
    notes: hasKeygenKey
      ? [`The private key is ${keyPath}, found beside the certificate; it is read by your app, never by the emulator.`]
      : [`Set ${variable('PLATFORM_PRIVATE_KEY_PATH')} to the private key the certificate was made from.`],
  };
}

function report(
  context: CommandContext,
  emulator: PlatformEmulator,
  settings: EmulatorSettings,
  registrations: readonly Registration[],
): void {
  const out = context.out;
  const { clockOffsetMs = 0, tokenLifetimeSeconds, leewaySeconds = 0 } = settings.emulatorOptions;
  const [main, ...named] = registrations;
  if (out.json) {
    const described = (registration: Registration) => ({
      name: registration.displayName,
      machineId: registration.machineId,
      thumbprint: registration.thumbprint,
      status: registration.status,
      permissions: registration.permissions,
      certificate: registration.source,
    });
    out.printJson({
      url: emulator.url,
      tokenUrl: emulator.tokenUrl,
      audience: emulator.audience,
      inspectorUrl: emulator.inspectorUrl,
      clockOffsetSeconds: clockOffsetMs / 1000,
      tokenLifetimeSeconds,
      leewaySeconds,
      integration: described(main),
      namedIntegrations: named.map((registration) => ({
        integration: registration.integration,
        ...described(registration),
        env: registration.env,
      })),
      userSignIn: settings.userClient ? { authorizeUrl: emulator.authorizeUrl, ...settings.userClient } : undefined,
      env: Object.assign({}, ...registrations.map((registration) => registration.env)) as Record<string, string>,
    });
    return;
  }
  out.print(`Platform emulator listening on ${out.style.bold(emulator.url)}`);
  if (emulator.inspectorUrl) out.print(`Inspector: ${out.style.bold(emulator.inspectorUrl)}`);
  const fields: Array<[string, string]> = [
    ['token endpoint', emulator.tokenUrl],
    ['audience', emulator.audience],
    ...integrationFields(main),
    ['clock', clockOffsetMs === 0 ? 'this machine’s' : `${clockOffsetMs / 1000} s against this machine’s`],
    ['token lifetime', `${tokenLifetimeSeconds} s`],
    ['leeway', leewaySeconds === 0 ? 'none (strict nbf and exp)' : `${leewaySeconds} s`],
    ['placeholder API', 'POST /api/messages, GET /api/billing (placeholders: the real paths are not published)'],
  ];
  if (settings.userClient)
    fields.push(['user sign-in', `${emulator.authorizeUrl}, client ${settings.userClient.clientId}, GET /api/me`]);
  printFields(out, fields, '  ');
  for (const registration of named) {
    out.print();
    out.print(`Named integration '${registration.integration}' (forRoot({ name: '${registration.integration}' })):`);
    printFields(out, integrationFields(registration), '  ');
  }
  out.print();
  for (const note of new Set(registrations.flatMap((registration) => registration.notes))) out.print(note);
  out.print('Point an application or the CLI at it; paste into a shell or a .env file:');
  out.print();
  for (const [name, value] of Object.entries(main.env)) out.print(`export ${name}=${shellQuote(value)}`);
  for (const registration of named) {
    out.print(`# '${registration.integration}': platformAuthConfig.forIntegration('${registration.integration}')`);
    for (const [name, value] of Object.entries(registration.env)) out.print(`export ${name}=${shellQuote(value)}`);
  }
  out.print();
  out.print(
    "Then, in another terminal: 'npx platform-auth doctor' checks everything, 'npx platform-auth token' exchanges.",
  );
  out.print('Running until Ctrl+C (SIGINT) or SIGTERM.');
}

function integrationFields(registration: Registration): Array<[string, string]> {
  return [
    ['integration', `"${registration.displayName}", ${registration.status}`],
    ['machineId', registration.machineId],
    ['thumbprint', `${registration.thumbprint} (SHA-1, the assertion's iss)`],
    ['certificate', registration.source],
    ['permissions', registration.permissions.join(', ')],
  ];
}

/** One line per variable, so the values survive copy and paste into `.env` files and CI secrets. */
function singleLine(value: string): string {
  return value.trim().replace(/\r?\n/g, '\\n');
}

/** Single quotes keep `\n` literal in shells and in dotenv files alike. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
