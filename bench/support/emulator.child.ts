import { PlatformEmulator, type RegisterIntegrationInput } from 'nestjs-platform-auth/testing';

/**
 * The platform in a process of its own, driven over IPC: the heap the tenants bench reads then holds the library's
 * state only, not the emulator's registry and journal of 10,000 integrations, and 10,000 concurrent first calls need
 * only their client sockets in the bench process (each socket is a file descriptor at each end).
 */
type Command =
  | { readonly command: 'register'; readonly integrations: RegisterIntegrationInput[] }
  | { readonly command: 'create'; readonly name: string }
  | { readonly command: 'counters' };

const emulator = await PlatformEmulator.start({ tokenLifetimeSeconds: 3600 });
process.on('message', (message: Command) => {
  if (message.command === 'register') {
    emulator.registerIntegrations(message.integrations);
    process.send!({ registered: message.integrations.length });
  } else if (message.command === 'create') {
    void emulator.createIntegration({ name: message.name }).then((created) => process.send!(created.moduleOptions));
  } else {
    process.send!(emulator.counters);
  }
});
process.on('disconnect', () => void emulator.close());
process.send!({ url: emulator.url });
