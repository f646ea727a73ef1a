import { resolve } from 'node:path';
import { DEFAULT_INTEGRATION, integrationName } from '../../options/integration-name.util.js';
import { UsageError, stringOptions, type CommandContext } from '../cli.command.js';
import type { IntegrationRequest } from './emulator-registration.js';
import type { EmulatorState } from './emulator-state.js';

/**
 * `--integration NAME[=FILE]` (a named integration of `forRoot`) and `--tenant ID[=FILE]` (a tenant of `forTenants`),
 * in the order given, each name valid and given once across both.
 */
export function namedIntegrations(context: CommandContext): IntegrationRequest[] {
  const requests: IntegrationRequest[] = [];
  for (const option of ['integration', 'tenant'] as const) {
    const placeholder = option === 'tenant' ? 'ID' : 'NAME';
    for (const raw of stringOptions(context, option)) {
      const separator = raw.indexOf('=');
      const name = (separator < 0 ? raw : raw.slice(0, separator)).trim();
      const file = separator < 0 ? undefined : raw.slice(separator + 1).trim();
      try {
        integrationName(name);
      } catch {
        throw new UsageError(
          `--${option} takes ${placeholder}[=FILE], ${placeholder} lower-case letters, digits, '-' or '_', starting with a letter (at most 40), got '${raw}'`,
        );
      }
      if (name === DEFAULT_INTEGRATION)
        throw new UsageError(`--${option}: 'default' is the integration the emulator always registers; name another`);
      if (file === '') throw new UsageError(`--${option} ${name}= needs a certificate file after '='`);
      if (requests.some((request) => request.name === name))
        throw new UsageError(`--${option}: '${name}' is given more than once (names are shared with --integration)`);
      requests.push({
        name,
        certificatePath: file === undefined ? undefined : resolve(context.cwd, file),
        ...(option === 'tenant' ? { tenant: true } : {}),
      });
    }
  }
  return requests;
}

/**
 * The state's integrations as they were (machineId and the certificate the portal holds, which an upload may have
 * changed), then the ones the command line adds. A certificate or machineId given again for a kept integration
 * must be what the state holds: the state is the portal, and changing it silently would stale the `.env`.
 */
export function withState(requested: readonly IntegrationRequest[], state: EmulatorState): IntegrationRequest[] {
  const kept: IntegrationRequest[] = state.integrations.map((entry) => ({
    name: entry.name,
    machineId: entry.machineId,
    certificatePem: entry.certificatePem,
    certificatePath: entry.certificatePath,
    ...(entry.tenant ? { tenant: true } : {}),
  }));
  for (const request of requested) {
    const entry = kept.find((candidate) => candidate.name === request.name);
    if (!entry) {
      kept.push(request);
      continue;
    }
    if (request.machineId !== undefined && request.machineId !== entry.machineId) {
      throw new UsageError(
        `--state keeps machineId ${entry.machineId} for '${request.name}'; leave out --machine-id, or use another --state file`,
      );
    }
    if (request.certificatePath !== undefined && request.certificatePath !== entry.certificatePath) {
      throw new UsageError(
        `--state keeps '${request.name}' with ${entry.certificatePath ? `the certificate from ${entry.certificatePath}` : 'a throwaway certificate'}; change it with 'platform-auth emulator upload', or use another --state file`,
      );
    }
    if (Boolean(request.tenant) !== Boolean(entry.tenant)) {
      throw new UsageError(
        `--state keeps '${request.name}' as ${entry.tenant ? 'a tenant (--tenant)' : 'a named integration (--integration)'}; give it as such, or use another --state file`,
      );
    }
  }
  return kept;
}
