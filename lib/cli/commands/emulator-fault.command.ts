import type { EmulatorFault } from '../../testing/emulator/emulator.types.js';
import { MAX_FAULT_TIMES } from '../../testing/emulator/emulator.control-requests.js';
import { UsageError, integerOption, stringOption, type Command, type CommandContext } from '../cli.command.js';
import { EMULATOR_ADDRESS_OPTIONS, control, emulatorUrl, jsonRequest } from './emulator-control.client.js';

const KINDS = ['drop', 'delay', 'hang', 'html', 'malformed-json'] as const;
type Kind = (typeof KINDS)[number];
/** A delay longer than this is a hang: say `--kind hang`. */
const MAX_DELAY_SECONDS = 600;

export const emulatorFaultCommand: Command = {
  name: 'emulator fault',
  synopsis:
    '--target token|api (--status CODE [--retry-after SECONDS] | --kind drop|delay|hang|html|malformed-json [--delay SECONDS]) [--times N] (--url URL | --state FILE)',
  description: [
    "Queues a one-shot fault in a running 'platform-auth emulator' for the next request to the token endpoint",
    "(--target token) or to anything else (--target api), exactly what PlatformEmulator's injectFault queues in a test:",
    'an HTTP status (with Retry-After for 429 and 503), a dropped connection, a delay, a hang, an HTML page or truncated',
    "JSON. --times queues that many copies, used one per request. 'emulator reset' drops what is still queued. Uses the",
    'control endpoint, on loopback only.',
  ].join('\n'),
  options: {
    target: {
      type: 'string',
      placeholder: 'token|api',
      description: 'token: the token endpoint; api: every other request (the placeholder API, your own paths)',
    },
    status: {
      type: 'string',
      placeholder: 'CODE',
      description: 'answer with this HTTP status, 100 to 599, instead of processing the request',
    },
    'retry-after': {
      type: 'string',
      placeholder: 'SECONDS',
      description: 'with --status 429 or 503: the Retry-After header, whole seconds',
    },
    kind: {
      type: 'string',
      placeholder: 'KIND',
      description:
        'drop: reset the connection; delay: wait --delay SECONDS, then answer; hang: never answer; html: 200 with an HTML page; malformed-json: 200 with truncated JSON',
    },
    delay: {
      type: 'string',
      placeholder: 'SECONDS',
      description: `with --kind delay: how long, 0 to ${MAX_DELAY_SECONDS}, fractions allowed; default 1`,
    },
    times: {
      type: 'string',
      placeholder: 'N',
      description: `queue N copies, 1 to ${MAX_FAULT_TIMES}; default 1`,
    },
    ...EMULATOR_ADDRESS_OPTIONS,
  },
  run,
};

async function run(context: CommandContext): Promise<number> {
  const target = stringOption(context, 'target');
  if (target !== 'token' && target !== 'api')
    throw new UsageError(`'emulator fault' needs --target token or --target api, got ${describe(target)}`);
  const fault = faultOption(context);
  const times = integerOption(context, 'times', { min: 1, max: MAX_FAULT_TIMES, fallback: 1 });
  const url = emulatorUrl(context, 'emulator fault');
  const { pending } = await control<{ pending: { token: number; api: number } }>(
    url,
    '/faults',
    jsonRequest('POST', { target, fault, times }),
    'the fault',
  );
  const out = context.out;
  if (out.json) {
    out.printJson({ ok: true, url, target, fault, times, pending });
    return 0;
  }
  const requests = times === 1 ? 'the next request' : `the next ${times} requests`;
  out.print(`${out.style.ok('✓')} Queued ${faultText(fault)} for ${requests} to the ${target} on ${url}.`);
  out.print(`  pending: token ${pending.token}, api ${pending.api}; 'platform-auth emulator reset' drops them.`);
  return 0;
}

/** `--status` (with `--retry-after`) or `--kind`, one of the two, as the fault `injectFault` takes. */
function faultOption(context: CommandContext): EmulatorFault {
  const rawStatus = stringOption(context, 'status');
  const kind = stringOption(context, 'kind');
  const retryAfter = stringOption(context, 'retry-after');
  const delay = stringOption(context, 'delay');
  if ((rawStatus === undefined) === (kind === undefined))
    throw new UsageError("'emulator fault' needs either --status CODE or --kind KIND");
  if (rawStatus !== undefined) {
    if (delay !== undefined) throw new UsageError('--delay goes with --kind delay, not with --status');
    const status = integerOption(context, 'status', { min: 100, max: 599, fallback: 0 });
    if (retryAfter === undefined) return { kind: 'status', status };
    if (status !== 429 && status !== 503)
      throw new UsageError(`--retry-after goes with --status 429 or 503, got --status ${status}`);
    const seconds = integerOption(context, 'retry-after', { min: 0, max: 86_400, fallback: 0 });
    return { kind: 'retry-after', status, retryAfter: seconds };
  }
  if (!KINDS.includes(kind as Kind))
    throw new UsageError(`--kind must be one of ${KINDS.join(', ')}, got ${describe(kind)}`);
  if (retryAfter !== undefined) throw new UsageError('--retry-after goes with --status 429 or 503, not with --kind');
  if (kind !== 'delay') {
    if (delay !== undefined) throw new UsageError(`--delay goes with --kind delay, not with --kind ${kind}`);
    return { kind: kind as Exclude<Kind, 'delay'> };
  }
  const seconds = delay === undefined ? 1 : /^\d+(\.\d+)?$/.test(delay.trim()) ? Number(delay.trim()) : Number.NaN;
  if (!(seconds >= 0 && seconds <= MAX_DELAY_SECONDS))
    throw new UsageError(`--delay must be a number of seconds from 0 to ${MAX_DELAY_SECONDS}, got '${delay}'`);
  return { kind: 'delay', ms: Math.round(seconds * 1000) };
}

function faultText(fault: EmulatorFault): string {
  switch (fault.kind) {
    case 'status':
      return `HTTP ${fault.status}`;
    case 'retry-after':
      return `HTTP ${fault.status} with Retry-After: ${String(fault.retryAfter)}`;
    case 'delay':
      return `a delay of ${fault.ms / 1000} s`;
    case 'drop':
      return 'a dropped connection';
    default:
      return `'${fault.kind}'`;
  }
}

function describe(value: string | undefined): string {
  return value === undefined ? 'nothing' : `'${value}'`;
}
