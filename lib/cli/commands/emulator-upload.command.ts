import { resolve } from 'node:path';
import { DEFAULT_INTEGRATION, integrationName } from '../../options/integration-name.util.js';
import { CommandFailure, UsageError, stringOption, type Command, type CommandContext } from '../cli.command.js';
import { EMULATOR_ADDRESS_OPTIONS, control, emulatorUrl, jsonRequest } from './emulator-control.client.js';
import { emulatorDisplayName, readCertificatePem } from './emulator-registration.js';

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
    ...EMULATOR_ADDRESS_OPTIONS,
  },
  run,
};

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
  const url = emulatorUrl(context, 'emulator upload');
  const certificatePath = resolve(context.cwd, file);
  const certificatePem = readCertificatePem(certificatePath, `--certificate '${certificatePath}'`);

  const listed = await control<{ integrations: ListedIntegration[] }>(
    url,
    '/integrations',
    { method: 'GET' },
    'the upload',
  );
  const displayName = emulatorDisplayName(name);
  const target = listed.integrations.find((integration) => integration.name === displayName);
  if (!target) {
    const names = listed.integrations.map((integration) => `'${integration.name}'`).join(', ');
    throw new CommandFailure(`the emulator at ${url} has no integration '${name}'; it has ${names}`);
  }
  const { integration } = await control<{ integration: ListedIntegration }>(
    url,
    `/integrations/${encodeURIComponent(target.machineId)}/certificate`,
    jsonRequest('PUT', { certificatePem }),
    'the upload',
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
