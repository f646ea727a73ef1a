import { randomBytes } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { repeatsTooFewBytes } from '../../util/key-strength.util.js';
import { isLoopbackHost } from '../../util/loopback.util.js';
import {
  CommandFailure,
  UsageError,
  integerOption,
  stringOption,
  type Command,
  type CommandContext,
  type Env,
} from '../cli.command.js';
import { ENV_FILE_OPTION, requireConfiguration } from '../cli.environment.js';
import { applicationRuntime } from '../cli.exchange.js';
import type { Output } from '../cli.output.js';
import { AuthProxy } from '../proxy/auth-proxy.server.js';

const DEFAULT_PORT = 8787;
const DEFAULT_HOST = '127.0.0.1';
const KEY_VARIABLE = 'PLATFORM_PROXY_KEY';
/** The shortest key taken from the variable; a generated one has 43 characters (32 random bytes). */
const MIN_KEY_LENGTH = 16;

export const proxyCommand: Command = {
  name: 'proxy',
  synopsis: '[--port 8787] [--host 127.0.0.1] [--env-file FILE] [--integration NAME]',
  description: [
    'A local forwarder for tools that cannot sign assertions (curl, Postman, a script in any language): it forwards',
    'http://127.0.0.1:8787/<path> to the platform with the access token of the integration the PLATFORM_* variables',
    'configure (as doctor and token read them, ./.env included). The token is the module’s own: acquired, cached,',
    'renewed before expiry, and after a 401 renewed once and the request sent again. A path is forwarded to the',
    "platform's origin and nowhere else: an absolute URL, a Host that does not name the proxy, a browser's request,",
    'TRACE, CONNECT and OPTIONS are refused, and an Authorization the client sent is dropped. Loopback only, unless',
    '--host says otherwise: then it makes a key when it starts (or takes PLATFORM_PROXY_KEY), prints it, and forwards',
    'only requests that carry it in X-Platform-Proxy-Key. Runs until Ctrl+C (SIGINT) or SIGTERM.',
  ].join('\n'),
  options: {
    port: {
      type: 'string',
      placeholder: 'N',
      description: `port to listen on, 0 to 65535 (0: a free port chosen by the system); default ${DEFAULT_PORT}`,
    },
    host: {
      type: 'string',
      placeholder: 'ADDRESS',
      description: `address to listen on; default ${DEFAULT_HOST}. On another address, anyone who can reach it and has the key calls the platform as this integration`,
    },
    ...ENV_FILE_OPTION,
  },
  run,
};

async function run(context: CommandContext): Promise<number> {
  const out = context.out;
  const port = integerOption(context, 'port', { min: 0, max: 65535, fallback: DEFAULT_PORT });
  const host = hostOption(context);
  const configuration = await requireConfiguration(context);
  if (!configuration) return 1;
  const { config, env } = configuration;
  const key = proxyKey(env, host);
  const integration = stringOption(context, 'integration') ?? 'default';
  // The module's wiring, as an application runs it: its warnings, retry policy, rate limit and shared store.
  const runtime = await applicationRuntime(config, integration, stderrLogger(out));
  let proxy: AuthProxy | undefined;
  try {
    await runtime.onModuleInit();
    const platformOrigin = new URL(config.baseUrl).origin;
    proxy = await listen(host, port, {
      platformOrigin,
      send: runtime.platformFetch.fetch,
      key: key?.value,
      report: (line) => out.error(line),
    });
    if (!isLoopbackHost(host)) {
      out.error(
        `warning: listening on ${host}, not loopback: anyone who can reach ${proxy.url} and has its key calls the platform as this integration, with its token`,
      );
    }
    if (out.json) {
      const printed = key?.generated ? key.value : null;
      out.printJson({
        url: proxy.url,
        platform: platformOrigin,
        integration,
        keyRequired: key !== undefined,
        key: printed,
      });
    } else {
      out.print(`Auth proxy listening on ${out.style.bold(proxy.url)}`);
      out.print(`  forwards to  ${platformOrigin}, with the token of integration '${integration}'`);
      if (key === undefined) out.print(`  try          curl ${proxy.url}/api/billing`);
      else {
        const shown = key.generated ? key.value : `$${KEY_VARIABLE}`;
        out.print(`  key          ${key.generated ? out.style.bold(key.value) : `the value of ${KEY_VARIABLE}`}`);
        out.print(`  try          curl -H "X-Platform-Proxy-Key: ${shown}" ${proxy.url}/api/billing`);
      }
      out.print('Running until Ctrl+C (SIGINT) or SIGTERM.');
    }
    const signal = await context.untilStopped();
    await proxy.close();
    out.note(`${signal}: proxy closed.`);
    return 0;
  } finally {
    await proxy?.close();
    await runtime.onApplicationShutdown();
  }
}

/**
 * The key every request must carry: `PLATFORM_PROXY_KEY` when it is set, else, off loopback, 32 random bytes made
 * now. On loopback without the variable, none.
 */
function proxyKey(env: Env, host: string): { readonly value: string; readonly generated: boolean } | undefined {
  const given = env[KEY_VARIABLE];
  if (given !== undefined && given !== '') {
    if (given.length < MIN_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(given) || repeatsTooFewBytes(given)) {
      throw new CommandFailure(
        `${KEY_VARIABLE} must be at least ${MIN_KEY_LENGTH} printable ASCII characters without spaces, with at least 16 different bytes (openssl rand -hex 32 makes one); its value is not shown`,
      );
    }
    return { value: given, generated: false };
  }
  return isLoopbackHost(host) ? undefined : { value: randomBytes(32).toString('base64url'), generated: true };
}

function hostOption(context: CommandContext): string {
  const host = stringOption(context, 'host') ?? DEFAULT_HOST;
  if (host.trim() === '' || /[/\s@]/.test(host))
    throw new UsageError(`--host takes an address or a host name to listen on, e.g. 127.0.0.1, got '${host}'`);
  return host.replace(/^\[|\]$/g, '');
}

async function listen(
  host: string,
  port: number,
  options: Omit<Parameters<typeof AuthProxy.start>[0], 'host' | 'port'>,
): Promise<AuthProxy> {
  try {
    return await AuthProxy.start({ ...options, host, port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new CommandFailure(`port ${port} on ${host} is in use; choose another --port (0 for a free one)`);
    if (code === 'EACCES') throw new CommandFailure(`port ${port} needs privileges; choose a port above 1023`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw new CommandFailure(`--host ${host} is not an address of this machine`);
    throw error;
  }
}

/** The module's lines go to stderr, so that stdout stays the proxy's one report (and one JSON document with --json). */
function stderrLogger(out: Output): LoggerService {
  return {
    log: (message: unknown) => out.note(String(message)),
    warn: (message: unknown) => out.error(`warning: ${String(message)}`),
    error: (message: unknown) => out.error(String(message)),
  };
}
