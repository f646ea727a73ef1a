import type { PlatformEmulator } from '../../testing/emulator/platform.emulator.js';
import type { PlatformEmulatorOptions } from '../../testing/emulator/emulator.types.js';
import type { CommandContext } from '../cli.command.js';
import { printFields } from '../cli.output.js';
import type { IntegrationsFileReport } from './emulator-integrations-file.js';
import type { Registration } from './emulator-registration.js';
import { shellQuote, shellWord } from './rotation-steps.util.js';
import type { userClientOption } from './user-client-option.util.js';

/** What the report needs of the command line. */
interface ReportedSettings {
  readonly userClient: ReturnType<typeof userClientOption>;
  readonly emulatorOptions: PlatformEmulatorOptions;
  /** `--state FILE`, resolved. */
  readonly statePath?: string;
}

/** What `platform-auth emulator` prints once it is ready: its address, each integration and the variables. */
export function report(
  context: CommandContext,
  emulator: PlatformEmulator,
  settings: ReportedSettings,
  registrations: readonly Registration[],
  bulk?: IntegrationsFileReport,
): void {
  const out = context.out;
  const { clockOffsetMs = 0, tokenLifetimeSeconds, leewaySeconds = 0 } = settings.emulatorOptions;
  const [main, ...others] = registrations;
  const named = others.filter((registration) => !registration.tenant);
  const tenants = others.filter((registration) => registration.tenant);
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
      tenants: tenants.map((registration) => ({
        tenant: registration.integration,
        ...described(registration),
        settings: registration.tenant,
      })),
      integrationsFile: bulk,
      userSignIn: settings.userClient ? { authorizeUrl: emulator.authorizeUrl, ...settings.userClient } : undefined,
      statePath: settings.statePath,
      notes: [...new Set(registrations.flatMap((registration) => registration.notes))],
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
  if (bulk) fields.push(['integrations file', `${bulk.count} integrations from ${bulk.path}`]);
  if (settings.statePath)
    fields.push(['state', `${settings.statePath} (port, integrations, machineIds and certificates; no private key)`]);
  if (settings.userClient)
    fields.push(['user sign-in', `${emulator.authorizeUrl}, client ${settings.userClient.clientId}, GET /api/me`]);
  printFields(out, fields, '  ');
  for (const registration of named) {
    out.print();
    out.print(`Named integration '${registration.integration}' (forRoot({ name: '${registration.integration}' })):`);
    printFields(out, integrationFields(registration), '  ');
  }
  for (const registration of tenants) {
    out.print();
    out.print(`Tenant '${registration.integration}' (forTenants; its settings follow the variables):`);
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
  for (const registration of tenants) {
    out.print();
    out.print(`Tenant '${registration.integration}': what forTenants' resolve('${registration.integration}') returns:`);
    out.print(JSON.stringify(registration.tenant, null, 2));
  }
  out.print();
  out.print(
    "Then, in another terminal: 'npx platform-auth doctor' checks everything, 'npx platform-auth token' exchanges.",
  );
  const where = settings.statePath ? `--state ${shellWord(settings.statePath)}` : `--url ${emulator.url}`;
  out.print(
    `To rehearse a rotation (the portal's upload): npx platform-auth emulator upload --certificate FILE ${where}`,
  );
  out.print(`To add an integration or queue a fault from here on: npx platform-auth emulator add|fault|reset ${where}`);
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
