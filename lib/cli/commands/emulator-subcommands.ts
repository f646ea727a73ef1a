import type { Command } from '../cli.command.js';

/** The commands that drive a running emulator through its control endpoint, loaded on demand. */
export const EMULATOR_SUBCOMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  upload: async () => (await import('./emulator-upload.command.js')).emulatorUploadCommand,
  add: async () => (await import('./emulator-add.command.js')).emulatorAddCommand,
  fault: async () => (await import('./emulator-fault.command.js')).emulatorFaultCommand,
  reset: async () => (await import('./emulator-reset.command.js')).emulatorResetCommand,
};
