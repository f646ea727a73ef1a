import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { PlatformEmulator } from '../../testing/emulator/platform.emulator.js';
import type { RegisterIntegrationInput } from '../../testing/emulator/emulator.types.js';
import { CommandFailure, describeFsError } from '../cli.command.js';
import { readCertificatePem } from './emulator-registration.js';

/** What `--integrations-file` registered: printed as a count, since a vendor's test fleet can hold thousands. */
export interface IntegrationsFileReport {
  readonly path: string;
  readonly count: number;
}

const ROW_KEYS = new Set(['certificatePem', 'certificateFile', 'machineId', 'name', 'status']);

/**
 * Registers every row of a JSON file, an array of `{ certificatePem | certificateFile, machineId?, name?, status? }`
 * (a certificate file relative to the JSON file), all or none. A row that is wrong is named by its index, so a file
 * of 10,000 rows can be fixed without a search.
 */
export function registerIntegrationsFile(emulator: PlatformEmulator, path: string): IntegrationsFileReport {
  const source = `--integrations-file '${path}'`;
  let rows: unknown;
  try {
    rows = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CommandFailure(
      error instanceof SyntaxError ? `${source} is not JSON` : `cannot read ${source}: ${describeFsError(error)}`,
    );
  }
  if (!Array.isArray(rows)) throw new CommandFailure(`${source} must hold a JSON array of integrations`);
  const inputs = rows.map((row, index) => input(row, `${source} [${index}]`, dirname(path)));
  try {
    emulator.registerIntegrations(inputs);
  } catch (error) {
    throw new CommandFailure(`cannot register ${source}: ${(error as Error).message}`);
  }
  return { path, count: inputs.length };
}

function input(row: unknown, where: string, directory: string): RegisterIntegrationInput {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) {
    throw new CommandFailure(`${where} must be an object with certificatePem or certificateFile`);
  }
  const fields = row as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !ROW_KEYS.has(key));
  if (unknown.length > 0) {
    throw new CommandFailure(
      `${where} has unknown field(s) ${unknown.join(', ')}; allowed: ${[...ROW_KEYS].join(', ')}`,
    );
  }
  for (const key of ROW_KEYS) {
    if (fields[key] !== undefined && (typeof fields[key] !== 'string' || fields[key].trim() === '')) {
      throw new CommandFailure(`${where}: ${key} must be a non-empty string`);
    }
  }
  const { certificatePem, certificateFile, machineId, name, status } = fields as Record<string, string | undefined>;
  if ((certificatePem === undefined) === (certificateFile === undefined)) {
    throw new CommandFailure(`${where} needs exactly one of certificatePem and certificateFile`);
  }
  return {
    certificatePem:
      certificatePem ?? readCertificatePem(resolve(directory, certificateFile!), `${where} '${certificateFile}'`),
    machineId,
    name,
    status,
  };
}
