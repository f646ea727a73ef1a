import type { Command, CommandContext } from '../cli.command.js';
import { EMULATOR_ADDRESS_OPTIONS, control, emulatorUrl } from './emulator-control.client.js';

export const emulatorResetCommand: Command = {
  name: 'emulator reset',
  synopsis: '(--url URL | --state FILE)',
  description: [
    "Drops every fault still queued in a running 'platform-auth emulator' ('emulator fault', injectFault) and zeroes",
    'its counters, as resetCounters() does; integrations, tokens and the journal stay. Uses the control endpoint, on',
    'loopback only.',
  ].join('\n'),
  options: { ...EMULATOR_ADDRESS_OPTIONS },
  run,
};

async function run(context: CommandContext): Promise<number> {
  const url = emulatorUrl(context, 'emulator reset');
  const { cleared } = await control<{ cleared: { token: number; api: number } }>(
    url,
    '/reset',
    { method: 'POST' },
    'the reset',
  );
  const out = context.out;
  if (out.json) {
    out.printJson({ ok: true, url, cleared });
    return 0;
  }
  const count = cleared.token + cleared.api;
  out.print(
    `${out.style.ok('✓')} Dropped ${count} pending fault${count === 1 ? '' : 's'} (token ${cleared.token}, api ${cleared.api}) and zeroed the counters on ${url}.`,
  );
  return 0;
}
