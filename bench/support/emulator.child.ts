import { PlatformEmulator, type RegisterIntegrationInput } from 'nestjs-platform-auth/testing';

/**
 * The platform in a process of its own, so the heap the tenants bench reads holds the library's state only, not the
 * emulator's registry and journal of 10,000 integrations. Driven over IPC.
 */
type Command =
  | { readonly command: 'register'; readonly integrations: RegisterIntegrationInput[] }
  | { readonly command: 'counters' };

const emulator = await PlatformEmulator.start({ tokenLifetimeSeconds: 3600 });
process.on('message', (message: Command) => {
  if (message.command === 'register') {
    emulator.registerIntegrations(message.integrations);
    process.send!({ registered: message.integrations.length });
  } else {
    process.send!(emulator.counters);
  }
});
process.on('disconnect', () => void emulator.close());
process.send!({ url: emulator.url });
