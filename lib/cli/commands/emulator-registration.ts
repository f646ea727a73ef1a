import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { PlatformEmulator } from '../../testing/emulator/platform.emulator.js';
import type { RegisteredIntegration } from '../../testing/emulator/emulator.types.js';
import { formatPkcs11Uri, parsePkcs11Uri } from '../../credentials/pkcs11/pkcs11-uri.parser.js';
import { certificateThumbprint } from '../../credentials/thumbprint.util.js';
import { DEFAULT_INTEGRATION, integrationEnvName } from '../../options/integration-name.util.js';
import { parseCertificateFile } from '../certificate-info.util.js';
import { CommandFailure, describeFsError } from '../cli.command.js';
import { KEY_URI_FILE, PIN_FILE_PLACEHOLDER } from './keygen-token.util.js';

const INTEGRATION_NAME = 'platform-auth emulator';
const THROWAWAY_NOTE = 'The key is a throwaway that only this emulator accepts.';
/** What keygen writes beside publickey.cer (next-… beside next-publickey.cer); printed as the key when it is there. */
const KEYGEN_PRIVATE_KEY_FILE = 'private-key.pem';

/** One integration to register: the default one (`--certificate`, `--machine-id`) or a named one (`--integration`). */
export interface IntegrationRequest {
  /** `default`, or the name of a named integration. */
  readonly name: string;
  readonly certificatePath?: string;
  readonly machineId?: string;
  /** The certificate the state file holds (`--state`): what the portal had when the emulator last ran. */
  readonly certificatePem?: string;
  /** A tenant of `forTenants` (`--tenant`): printed as its settings, not as variables. */
  readonly tenant?: boolean;
}

/** An integration the emulator serves and the variables an app needs for it (`PLATFORM_<NAME>_…` for a named one). */
export interface Registration {
  readonly integration: string;
  /** How the emulator lists it. */
  readonly displayName: string;
  readonly machineId: string;
  readonly thumbprint: string;
  readonly status: string;
  readonly permissions: readonly string[];
  readonly source: string;
  readonly certificatePem: string;
  readonly certificatePath?: string;
  readonly env: Record<string, string>;
  /** For a tenant: its settings as `forTenants`' resolve returns them (`PlatformAuthOptions`); `env` is empty. */
  readonly tenant?: Record<string, unknown>;
  readonly notes: readonly string[];
}

/** Where each variable's value goes in a tenant's settings. */
const TENANT_OPTIONS: Readonly<Record<string, string>> = {
  PLATFORM_BASE_URL: 'baseUrl',
  PLATFORM_MACHINE_ID: 'machineId',
  PLATFORM_AUDIENCE: 'audience',
  PLATFORM_PRIVATE_KEY: 'key.privateKey',
  PLATFORM_PRIVATE_KEY_PATH: 'key.privateKeyPath',
  PLATFORM_PRIVATE_KEY_URI: 'key.privateKeyUri',
  PLATFORM_CERTIFICATE: 'key.certificate',
  PLATFORM_CERTIFICATE_PATH: 'key.certificatePath',
};

/** The name the emulator lists an integration under; `emulator upload` finds it by this name. */
export function emulatorDisplayName(name: string): string {
  return name === DEFAULT_INTEGRATION ? INTEGRATION_NAME : `${INTEGRATION_NAME} (${name})`;
}

/** A certificate file (PEM or DER) as PEM, or a failure naming `source` and what is wrong with the file. */
export function readCertificatePem(path: string, source: string): string {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new CommandFailure(`cannot read ${source}: ${describeFsError(error)}`);
  }
  return parseCertificateFile(content, source).certificate.toString();
}

/**
 * Registers the integration and says what an application needs for it: the `PLATFORM_…` variables of `forRoot`
 * (`PLATFORM_<NAME>_…` for a named one), or for a tenant the settings `forTenants`' resolve returns, which a tenant
 * reads instead of variables.
 */
export async function register(emulator: PlatformEmulator, request: IntegrationRequest): Promise<Registration> {
  if (!request.tenant) {
    return registerAs(emulator, request, (base) => integrationEnvName(base, request.name), singleLine);
  }
  const registration = await registerAs(
    emulator,
    request,
    (base) => TENANT_OPTIONS[base] ?? base,
    (value) => value,
  );
  const tenant: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(registration.env)) {
    const [first, second] = path.split('.');
    if (second === undefined) tenant[first] = value;
    else tenant[first] = { ...(tenant[first] as object | undefined), [second]: value };
  }
  return { ...registration, env: {}, tenant };
}

/** `variable` names each setting (a variable, or a tenant's option); `line` writes its value. */
async function registerAs(
  emulator: PlatformEmulator,
  request: IntegrationRequest,
  variable: (base: string) => string,
  line: (value: string) => string,
): Promise<Registration> {
  const { machineId, name } = request;
  const displayName = emulatorDisplayName(name);
  if (request.certificatePath === undefined && request.certificatePem === undefined) {
    const integration = await emulator.createIntegration({ name: displayName, machineId });
    return {
      ...described(name, integration),
      source: 'a throwaway key and certificate made in memory',
      certificatePem: integration.certificatePem,
      env: Object.fromEntries(Object.entries(integration.env).map(([base, value]) => [variable(base), line(value)])),
      notes: [THROWAWAY_NOTE],
    };
  }
  const path = request.certificatePath;
  const option = request.tenant ? 'tenant' : 'integration';
  const source = name === DEFAULT_INTEGRATION ? `--certificate '${path}'` : `--${option} ${name}='${path}'`;
  const certificatePem = request.certificatePem ?? readCertificatePem(path!, source);
  let integration: RegisteredIntegration;
  try {
    integration = emulator.registerIntegration({ name: displayName, certificatePem, machineId });
  } catch (error) {
    throw new CommandFailure(
      `cannot register ${path === undefined ? `'${name}'` : source}: ${(error as Error).message}`,
    );
  }
  const env: Record<string, string> = {
    [variable('PLATFORM_BASE_URL')]: emulator.url,
    [variable('PLATFORM_MACHINE_ID')]: integration.machineId,
  };
  const notes: string[] = [];
  if (path === undefined) {
    // A throwaway integration kept by --state: the emulator never had its key after the run that printed it.
    env[variable('PLATFORM_CERTIFICATE')] = line(certificatePem);
    notes.push(
      `${variable('PLATFORM_PRIVATE_KEY')}: keep the throwaway key printed when the state file was written; the state holds no private key.`,
    );
  } else {
    const key = keyBeside(path, variable);
    Object.assign(env, key.env, { [variable('PLATFORM_CERTIFICATE_PATH')]: path });
    notes.push(key.note);
    if (request.certificatePem !== undefined && fileThumbprint(path) !== integration.thumbprint) {
      notes.push(
        `'${name}' holds the certificate uploaded last (thumbprint ${integration.thumbprint}), not the one in ${path}.`,
      );
    }
  }
  if (emulator.audience !== new URL(emulator.url).host) env[variable('PLATFORM_AUDIENCE')] = emulator.audience;
  return {
    ...described(name, integration),
    source: path ?? 'a throwaway certificate kept by --state (its key is not)',
    certificatePem,
    certificatePath: path,
    env,
    notes,
  };
}

function described(name: string, integration: RegisteredIntegration) {
  return {
    integration: name,
    displayName: integration.name,
    machineId: integration.machineId,
    thumbprint: integration.thumbprint,
    status: integration.status,
    permissions: integration.permissions,
  };
}

/** The private key found beside a certificate, as variables and as the `key` option of a tenant's settings. */
interface KeyBeside {
  readonly env: Record<string, string>;
  readonly key: { readonly privateKeyPath: string } | { readonly privateKeyUri: string };
  readonly note: string;
}

/**
 * The private key keygen wrote beside the certificate: its PEM file, or the file holding its PKCS#11 URI (printed
 * with a placeholder PIN file: keygen never writes a PIN there, and one put there by hand is never printed).
 */
export function keyBeside(certificatePath: string, variable: (base: string) => string): KeyBeside {
  const prefix = basename(certificatePath).startsWith('next-') ? 'next-' : '';
  const pemPath = join(dirname(certificatePath), prefix + KEYGEN_PRIVATE_KEY_FILE);
  if (existsSync(pemPath)) {
    return {
      env: { [variable('PLATFORM_PRIVATE_KEY_PATH')]: pemPath },
      key: { privateKeyPath: pemPath },
      note: `The private key is ${pemPath}, found beside the certificate; it is read by your app, never by the emulator.`,
    };
  }
  const uriPath = join(dirname(certificatePath), prefix + KEY_URI_FILE);
  const uri = existsSync(uriPath) ? parsePkcs11Uri(readFileSync(uriPath, 'utf8').trim()) : undefined;
  if (uri && !uri.problems) {
    const privateKeyUri = formatPkcs11Uri({ ...uri.uri, pin: undefined }, undefined, PIN_FILE_PLACEHOLDER);
    return {
      env: { [variable('PLATFORM_PRIVATE_KEY_URI')]: privateKeyUri },
      key: { privateKeyUri },
      note: `The private key is in a PKCS#11 token (${uri.uri.display}, from ${uriPath}); put its PIN in a file only your app can read and replace ${PIN_FILE_PLACEHOLDER}.`,
    };
  }
  const unknown = '<the private key this certificate was made from>';
  return {
    env: { [variable('PLATFORM_PRIVATE_KEY_PATH')]: unknown },
    key: { privateKeyPath: unknown },
    note: `Set ${variable('PLATFORM_PRIVATE_KEY_PATH')} to the private key the certificate was made from.`,
  };
}

function fileThumbprint(path: string): string | undefined {
  try {
    return certificateThumbprint(parseCertificateFile(readFileSync(path), path).certificate, 'sha1');
  } catch {
    return undefined;
  }
}

/** One line per variable, so the values survive copy and paste into `.env` files and CI secrets. */
function singleLine(value: string): string {
  return value.trim().replace(/\r?\n/g, '\\n');
}
