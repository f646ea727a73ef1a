import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CommandFailure, UsageError, type Command, type Env, type OptionSpec } from './cli.command.js';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import { createOutput, type Output, type OutputStream } from './cli.output.js';

interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly env: Env;
  readonly cwd: string;
  readonly untilStopped: () => Promise<string>;
}

interface CommandEntry {
  readonly summary: string;
  readonly load: () => Promise<Command>;
}

/** Loaded on demand, so `thumbprint`, `keygen` and `--help` do not pay for Nest, axios and jose. */
const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  keygen: {
    summary: 'generate an RSA-2048 key (private-key.pem, or inside a PKCS#11 token) and a self-signed publickey.cer',
    load: async () => (await import('./commands/keygen.command.js')).keygenCommand,
  },
  thumbprint: {
    summary: "show a certificate's thumbprints (SHA-1 as the portal shows it, SHA-256) and validity",
    load: async () => (await import('./commands/thumbprint.command.js')).thumbprintCommand,
  },
  assertion: {
    summary: 'build a client assertion from the PLATFORM_* variables and check it against the assertion rules, offline',
    load: async () => (await import('./commands/assertion.command.js')).assertionCommand,
  },
  token: {
    summary: 'exchange one assertion for an access token and report the outcome',
    load: async () => (await import('./commands/token.command.js')).tokenCommand,
  },
  doctor: {
    summary: 'check key, certificate, settings, endpoint, clock and one real exchange, each with its fix',
    load: async () => (await import('./commands/doctor.command.js')).doctorCommand,
  },
  emulator: {
    summary: 'run the local platform emulator and print the variables that point an app at it',
    load: async () => (await import('./commands/emulator.command.js')).emulatorCommand,
  },
  proxy: {
    summary: 'forward local requests (curl http://127.0.0.1:8787/…) to the platform with the integration’s token',
    load: async () => (await import('./commands/proxy.command.js')).proxyCommand,
  },
};

const COMMON_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  json: { type: 'boolean', description: 'machine-readable output: one JSON document on stdout' },
  help: { type: 'boolean', description: 'show this help' },
};

/** Runs one command line and returns the exit code: 0 success, 1 a check or the operation failed, 2 usage error. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const out = createOutput(io.stdout, io.stderr, io.env, argv.includes('--json'));
  const [first, ...rest] = argv;
  let commandName: string | undefined;
  try {
    if (first === undefined) {
      printGeneralHelp(out);
      return 2;
    }
    if (first === '--help' || first === '-h' || first === 'help') {
      const topic = first === 'help' ? rest[0] : undefined;
      if (topic === undefined) printGeneralHelp(out);
      else printCommandHelp(out, await loadCommand(topic));
      return 0;
    }
    if (first === '--version' || first === '-V') {
      if (out.json) out.printJson({ version: packageVersion() });
      else out.print(packageVersion());
      return 0;
    }
    if (first.startsWith('-')) throw new UsageError(`expected a command before '${first}'`);
    const parent = await loadCommand(first);
    const sub = rest[0] !== undefined && parent.subcommands && Object.hasOwn(parent.subcommands, rest[0]);
    const command = sub ? await parent.subcommands[rest[0]]() : parent;
    commandName = command.name;
    const { values, positionals } = parseCommandLine(command, sub ? rest.slice(1) : rest);
    if (values.help === true) {
      printCommandHelp(out, command);
      return 0;
    }
    return await command.run({
      options: values,
      positionals,
      out,
      env: io.env,
      cwd: io.cwd,
      now: Date.now,
      untilStopped: io.untilStopped,
    });
  } catch (error) {
    return reportError(out, error, commandName);
  }
}

async function loadCommand(name: string): Promise<Command> {
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!entry) throw new UsageError(`unknown command '${name}'; the commands are ${Object.keys(COMMANDS).join(', ')}`);
  return entry.load();
}

function parseCommandLine(command: Command, args: readonly string[]) {
  const specs = { ...command.options, ...COMMON_OPTIONS };
  const options = Object.fromEntries(
    Object.entries(specs).map(([name, spec]) => [
      name,
      name === 'help' ? { type: spec.type, short: 'h' } : { type: spec.type, multiple: spec.multiple === true },
    ]),
  );
  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: joinNegativeValues(args, specs), options, strict: true, allowPositionals: true });
  } catch (error) {
    // Node's first sentence names the option; the rest is advice about '--' that does not apply here.
    throw new UsageError((error as Error).message.split('. ')[0]);
  }
  const expected = command.positionals ?? [];
  if (parsed.values.help !== true) {
    if (parsed.positionals.length < expected.length) {
      throw new UsageError(`'${command.name}' needs ${expected.slice(parsed.positionals.length).join(' ')}`);
    }
    if (parsed.positionals.length > expected.length) {
      throw new UsageError(`unexpected argument '${parsed.positionals[expected.length]}'`);
    }
  }
  return parsed;
}

/**
 * `--clock-offset -3` as `--clock-offset=-3`: parseArgs takes a value that starts with a dash for a mistyped option,
 * but a negative number after an option that takes a value can only be that value.
 */
function joinNegativeValues(args: readonly string[], specs: Readonly<Record<string, OptionSpec>>): string[] {
  const joined: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const name = args[index].startsWith('--') ? args[index].slice(2) : undefined;
    const next = args[index + 1];
    if (name && specs[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      joined.push(`--${name}=${next}`);
      index++;
    } else joined.push(args[index]);
  }
  return joined;
}

function reportError(out: Output, error: unknown, commandName: string | undefined): number {
  const kind = error instanceof UsageError ? 'usage' : error instanceof CommandFailure ? 'failure' : 'unexpected';
  const message =
    kind === 'unexpected'
      ? `unexpected error: ${sanitizeRemoteText(error instanceof Error ? `${error.name}: ${error.message}` : String(error))}`
      : (error as Error).message;
  if (out.json) out.printJson({ ok: false, error: { kind, message } });
  out.error(message);
  if (kind === 'usage') out.note(`Run 'platform-auth ${commandName ? `${commandName} ` : ''}--help' for usage.`);
  return kind === 'usage' ? 2 : 1;
}

function packageVersion(): string {
  // dist/cli/main.js and lib/cli/cli.ts both sit two levels below the package root.
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

function printGeneralHelp(out: Output): void {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  out.print(`platform-auth ${packageVersion()}: set up and check a platform system integration (nestjs-platform-auth)`);
  out.print();
  out.print('Usage: platform-auth <command> [options]');
  out.print();
  out.print('Commands:');
  for (const [name, entry] of Object.entries(COMMANDS)) out.print(`  ${name.padEnd(width)}  ${entry.summary}`);
  out.print();
  out.print('Options:');
  out.print("  -h, --help     show help; platform-auth <command> --help shows a command's options");
  out.print('  -V, --version  show the version');
  out.print('  --json         machine-readable output: one JSON document on stdout');
  out.print();
  out.print(
    'assertion, token and doctor read the same variables as the module: PLATFORM_BASE_URL, PLATFORM_MACHINE_ID,',
  );
  out.print(
    'PLATFORM_PRIVATE_KEY_PATH or PLATFORM_PRIVATE_KEY (or PLATFORM_PRIVATE_KEY_URI, a key in a PKCS#11 token),',
  );
  out.print(
    'PLATFORM_PRIVATE_KEY_PASSPHRASE, PLATFORM_CERTIFICATE_PATH or PLATFORM_CERTIFICATE, PLATFORM_CERT_THUMBPRINT,',
  );
  out.print(
    'PLATFORM_AUDIENCE, from the environment and ./.env when it exists\n(--env-file FILE reads another file, --no-env-file none).',
  );
  out.print(
    'Keys, passphrases, PINs, assertions and tokens are never printed, except on request (assertion --raw, token --show-token).',
  );
  out.print();
  out.print('Exit codes: 0 success, 1 a check or the operation failed, 2 the command line is wrong.');
  out.print('Manual: docs/cli.md in the nestjs-platform-auth repository.');
}

function printCommandHelp(out: Output, command: Command): void {
  const specs = Object.entries({ ...command.options, ...COMMON_OPTIONS });
  const names = specs.map(
    ([name, spec]) => `${name === 'help' ? '-h, ' : ''}--${name}${spec.placeholder ? ` ${spec.placeholder}` : ''}`,
  );
  const width = Math.max(...names.map((name) => name.length));
  out.print(`Usage: platform-auth ${command.name}${command.synopsis ? ` ${command.synopsis}` : ''} [--json]`);
  out.print();
  out.print(command.description);
  out.print();
  out.print('Options:');
  specs.forEach(([, spec], index) => out.print(`  ${names[index].padEnd(width)}  ${spec.description}`));
  out.print();
  out.print('Exit codes: 0 success, 1 a check or the operation failed, 2 the command line is wrong.');
}
