import { resolve } from 'node:path';
import { DEFAULT_INTEGRATION, integrationEnvName, integrationName } from '../../options/integration-name.util.js';
import { UsageError, flag, stringOption, type Command, type CommandContext } from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { EMULATOR_ADDRESS_OPTIONS, control, emulatorUrl, jsonRequest } from './emulator-control.client.js';
import { emulatorDisplayName, keyBeside, readCertificatePem } from './emulator-registration.js';
import { shellQuote } from './rotation-steps.util.js';

export const emulatorAddCommand: Command = {
  name: 'emulator add',
  synopsis: '--certificate FILE [--name NAME] [--tenant] (--url URL | --state FILE)',
  description: [
    "Registers an integration in a running 'platform-auth emulator', as the portal's \"Add System integration\" does,",
    'and prints the machineId the emulator assigned with the settings an application needs: the PLATFORM_* variables',
    "of forRoot (PLATFORM_<NAME>_* with --name), or with --tenant the tenant's settings as JSON, what the resolve",
    'function of PlatformAuthModule.forTenants returns for it. Only the certificate goes to the emulator; the private',
    'key found beside it is named, never read. Not kept by --state. Uses the control endpoint, on loopback only.',
  ].join('\n'),
  options: {
    certificate: {
      type: 'string',
      placeholder: 'FILE',
      description: 'the certificate to register (publickey.cer from keygen, PEM or DER)',
    },
    name: {
      type: 'string',
      placeholder: 'NAME',
      description:
        "the integration's name (forRoot({ name }), or the tenant's id with --tenant): lower-case letters, digits, '-' or '_'",
    },
    tenant: {
      type: 'boolean',
      description: "print the tenant's settings (PlatformAuthOptions) as JSON instead of PLATFORM_* variables",
    },
    ...EMULATOR_ADDRESS_OPTIONS,
  },
  run,
};

interface AddedIntegration {
  readonly integration: {
    readonly machineId: string;
    readonly name: string;
    readonly thumbprint: string;
    readonly status: string;
    readonly permissions: readonly string[];
  };
  readonly url: string;
  readonly audience: string;
}

async function run(context: CommandContext): Promise<number> {
  const name = nameOption(context);
  const tenant = flag(context, 'tenant');
  const file = stringOption(context, 'certificate');
  if (file === undefined) throw new UsageError("'emulator add' needs --certificate FILE");
  const url = emulatorUrl(context, 'emulator add');
  const certificatePath = resolve(context.cwd, file);
  const certificatePem = readCertificatePem(certificatePath, `--certificate '${certificatePath}'`);
  const added = await control<AddedIntegration>(
    url,
    '/integrations',
    // Unnamed, the emulator names it as it names any integration registered without a name.
    jsonRequest('POST', { certificatePem, name: name === undefined ? undefined : emulatorDisplayName(name) }),
    'the registration',
  );
  const { machineId, thumbprint } = added.integration;
  const variable = (base: string) => integrationEnvName(base, name ?? DEFAULT_INTEGRATION);
  const key = keyBeside(certificatePath, variable);
  const audience = added.audience === new URL(added.url).host ? undefined : added.audience;
  const settings = tenant
    ? {
        tenant: {
          baseUrl: added.url,
          machineId,
          key: { ...key.key, certificatePath },
          ...(audience === undefined ? {} : { audience }),
        },
      }
    : {
        env: {
          [variable('PLATFORM_BASE_URL')]: added.url,
          [variable('PLATFORM_MACHINE_ID')]: machineId,
          ...key.env,
          [variable('PLATFORM_CERTIFICATE_PATH')]: certificatePath,
          ...(audience === undefined ? {} : { [variable('PLATFORM_AUDIENCE')]: audience }),
        },
      };

  const out = context.out;
  if (out.json) {
    out.printJson({ ok: true, url, integration: name ?? null, ...added.integration, certificatePath, ...settings });
    return 0;
  }
  const label = name === undefined ? undefined : `'${name}'`;
  const what = tenant ? (label ? `tenant ${label}` : 'a tenant') : (label ?? 'an integration');
  out.print(`${out.style.ok('✓')} Registered ${certificatePath} as ${what} on ${url}.`);
  printFields(
    out,
    [
      ['integration', `"${added.integration.name}", ${added.integration.status}`],
      ['machineId', machineId],
      ['thumbprint', `${thumbprint} (SHA-1, the assertion's iss)`],
      ['permissions', added.integration.permissions.join(', ')],
    ],
    '  ',
  );
  out.print();
  out.print(key.note);
  if (settings.tenant) {
    out.print(`The tenant's settings (PlatformAuthOptions), for forTenants' resolve to return:`);
    out.print();
    out.print(JSON.stringify(settings.tenant, null, 2));
    return 0;
  }
  out.print(
    name === undefined
      ? 'Point an application at it (forRoot, or platformAuthConfig); paste into a shell or a .env file:'
      : `Point platformAuthConfig.forIntegration('${name}') at it; paste into a shell or a .env file:`,
  );
  out.print();
  for (const [variableName, value] of Object.entries(settings.env))
    out.print(`export ${variableName}=${shellQuote(value)}`);
  return 0;
}

/** `--name NAME`, a valid integration name; `default` is the emulator's own integration. */
function nameOption(context: CommandContext): string | undefined {
  const name = stringOption(context, 'name');
  if (name === undefined) return undefined;
  try {
    integrationName(name);
  } catch {
    throw new UsageError(
      `--name takes lower-case letters, digits, '-' or '_', starting with a letter (at most 40), got '${name}'`,
    );
  }
  if (name === DEFAULT_INTEGRATION)
    throw new UsageError("--name: 'default' is the integration the emulator registers itself; name another");
  return name;
}
