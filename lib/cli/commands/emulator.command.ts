import { PlatformEmulator } from '../../testing/platform.emulator.js';
import { CommandFailure, integerOption, type Command, type CommandContext } from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { userClientOption } from './user-client-option.util.js';

export const emulatorCommand: Command = {
  name: 'emulator',
  synopsis: '[--port N] [--user-client ID=URI[,URI…]]',
  description: [
    'Runs the platform emulator of nestjs-platform-auth/testing on 127.0.0.1 with a freshly registered system',
    'integration, and prints the PLATFORM_* variables that point an application at it (PEM values on one line with',
    'literal \\n, which the module accepts). Runs until Ctrl+C (SIGINT) or SIGTERM, then closes every connection and',
    'exits 0. A development tool: plain HTTP on loopback, everything in memory, a throwaway key.',
  ].join('\n'),
  options: {
    port: {
      type: 'string',
      placeholder: 'N',
      description: 'port to listen on, 0 to 65535; default 0, a free port chosen by the system',
    },
    'user-client': {
      type: 'string',
      placeholder: 'ID=URI[,URI…]',
      description: 'registers a public client for user sign-in with these exact redirect URIs',
    },
  },
  run,
};

const INTEGRATION_NAME = 'platform-auth emulator';

async function run(context: CommandContext): Promise<number> {
  const port = integerOption(context, 'port', { min: 0, max: 65535, fallback: 0 });
  const userClient = userClientOption(context);
  const emulator = await start(port);
  try {
    const integration = await emulator.createIntegration({ name: INTEGRATION_NAME });
    const env = Object.fromEntries(Object.entries(integration.env).map(([name, value]) => [name, singleLine(value)]));
    if (userClient) {
      emulator.registerUserClient(userClient);
      env.PLATFORM_USER_CLIENT_ID = userClient.clientId;
      env.PLATFORM_USER_REDIRECT_URI = userClient.redirectUris[0];
    }
    const out = context.out;
    if (out.json) {
      out.printJson({
        url: emulator.url,
        tokenUrl: emulator.tokenUrl,
        audience: emulator.audience,
        integration: {
          name: integration.name,
          machineId: integration.machineId,
          thumbprint: integration.thumbprint,
          status: integration.status,
          permissions: integration.permissions,
        },
        userSignIn: userClient ? { authorizeUrl: emulator.authorizeUrl, ...userClient } : undefined,
        env,
      });
    } else {
      out.print(`Platform emulator listening on ${out.style.bold(emulator.url)}`);
      printFields(
        out,
        [
          ['token endpoint', emulator.tokenUrl],
          ['audience', emulator.audience],
          ['integration', `"${integration.name}", machineId ${integration.machineId}, ${integration.status}`],
          ['thumbprint', integration.thumbprint],
          ['permissions', integration.permissions.join(', ')],
          ['placeholder API', 'POST /api/messages, GET /api/billing (placeholders: the real paths are not published)'],
          ...(userClient
            ? [['user sign-in', `${emulator.authorizeUrl}, client ${userClient.clientId}, GET /api/me`] as const]
            : []),
        ],
        '  ',
      );
      out.print();
      out.print(
        'Point an application at it (the key is a throwaway that only this emulator accepts); paste into a shell or a .env file:',
      );
      out.print();
      for (const [name, value] of Object.entries(env)) out.print(`export ${name}=${shellQuote(value)}`);
      out.print();
      out.print('Running until Ctrl+C (SIGINT) or SIGTERM.');
    }
    const signal = await context.untilStopped();
    await emulator.close();
    out.note(`${signal}: emulator closed.`);
    return 0;
  } finally {
    await emulator.close();
  }
}

async function start(port: number): Promise<PlatformEmulator> {
  try {
    return await PlatformEmulator.start({ port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new CommandFailure(
        `port ${port} on 127.0.0.1 is in use; choose another --port, or leave it out for a free one`,
      );
    if (code === 'EACCES') throw new CommandFailure(`port ${port} needs privileges; choose a port above 1023`);
    throw error;
  }
}

/** One line per variable, so the values survive copy and paste into `.env` files and CI secrets. */
function singleLine(value: string): string {
  return value.trim().replace(/\r?\n/g, '\\n');
}

/** Single quotes keep `\n` literal in shells and in dotenv files alike. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
