import { flag, type Command, type CommandContext } from '../cli.command.js';
import { ENV_FILE_OPTION, requireConfiguration } from '../cli.environment.js';
import { effectiveClockMargin } from '../../token/assertion.signer.js';
import { offsetSeconds } from '../../token/token-exchange.hints.js';
import type { ResolvedPlatformAuthConfig } from '../../platform-auth.configuration.js';
import { exchangeOnce, type ExchangeFailure, type ExchangeSuccess } from '../cli.exchange.js';
import { printFields, signedSeconds, type Output } from '../cli.output.js';

export const tokenCommand: Command = {
  name: 'token',
  synopsis: '[--show-token] [--env-file FILE]',
  description: [
    "Performs one token exchange (docs/platform-contract.md#token-exchange) with the module's AssertionSigner and",
    "TokenProvider, configured by the PLATFORM_* variables, and reports the token type, expires_in, the platform's",
    'clock offset and the timing.',
    'On failure it prints the TokenExchangeError fields: reason, status, OAuth error and description, and the hint.',
    'Neither the assertion nor the access token is printed, unless --show-token asks for the token.',
  ].join('\n'),
  options: {
    'show-token': {
      type: 'boolean',
      description: 'also print the access token (a bearer credential: anyone holding it can call the platform)',
    },
    ...ENV_FILE_OPTION,
  },
  run,
};

async function run(context: CommandContext): Promise<number> {
  const out = context.out;
  const configuration = await requireConfiguration(context);
  if (!configuration) return 1;
  const { config } = configuration;
  const result = await exchangeOnce(config);
  const configWarnings = config.warnings.map((warning) => `${warning.setting}: ${warning.message}`);
  const warnings = [...configWarnings, ...result.warnings];
  if (result.ok) printSuccess(out, config, result, warnings, flag(context, 'show-token'));
  else printFailure(out, config.tokenUrl, result, warnings);
  return result.ok ? 0 : 1;
}

/** A skewed clock needs no line of its own here: the provider has warned about it, and that is among `warnings`. */
function printSuccess(
  out: Output,
  config: ResolvedPlatformAuthConfig,
  result: ExchangeSuccess,
  warnings: readonly string[],
  showToken: boolean,
): void {
  const offset = result.clockOffsetSeconds;
  const tokenUrl = config.tokenUrl;
  if (out.json) {
    out.printJson({
      ok: true,
      tokenUrl,
      tokenType: result.tokenType,
      expiresIn: result.expiresInSeconds,
      expiresAt: result.expiresAt.toISOString(),
      clockOffsetSeconds: offset ?? null,
      durationMs: result.durationMs,
      warnings,
      ...(showToken ? { accessToken: result.accessToken } : {}),
    });
    return;
  }
  out.print(`${out.style.ok('✓')} The platform issued an access token (${tokenUrl}).`);
  printFields(
    out,
    [
      ['token_type', result.tokenType],
      ['expires_in', `${result.expiresInSeconds} s (until ${result.expiresAt.toISOString()})`],
      [
        'clock offset',
        offset === undefined
          ? 'unknown: no Date header in the answer'
          : `${signedSeconds(offset)} (platform minus local, from the Date header; the clock margin tolerates ±${effectiveClockMargin(config)} s)`,
      ],
      ['timing', `${result.durationMs} ms, one attempt`],
      ['access_token', showToken ? result.accessToken : out.style.dim('not shown; --show-token prints it')],
    ],
    '  ',
  );
  printWarnings(out, warnings);
}

function printFailure(out: Output, tokenUrl: string, result: ExchangeFailure, warnings: readonly string[]): void {
  const { error } = result;
  if (out.json) {
    out.printJson({
      ok: false,
      tokenUrl,
      durationMs: result.durationMs,
      warnings,
      error: {
        reason: error.reason,
        status: error.status ?? null,
        oauthError: error.oauthError ?? null,
        description: error.oauthErrorDescription ?? null,
        hint: error.hint,
        attempts: error.attempts,
        clockOffsetSeconds: offsetSeconds(error.clockOffsetMs) ?? null,
        networkCode: error.networkCode ?? null,
        message: error.message,
      },
    });
    return;
  }
  const headline =
    error.reason === 'http_error'
      ? `HTTP ${error.status}${error.oauthError ? ` ${error.oauthError}` : ''}`
      : error.summary;
  out.print(`${out.style.fail('✗')} The token exchange failed: ${headline}`);
  const rows: Array<[string, string]> = [
    ['reason', error.reason],
    ['status', error.status === undefined ? 'no HTTP answer' : String(error.status)],
  ];
  if (error.oauthError) rows.push(['error', error.oauthError]);
  if (error.oauthErrorDescription) rows.push(['description', error.oauthErrorDescription]);
  if (error.networkCode) rows.push(['network code', error.networkCode]);
  const offset = offsetSeconds(error.clockOffsetMs);
  if (offset !== undefined) rows.push(['clock offset', `${signedSeconds(offset)} (platform minus local)`]);
  rows.push(
    ['timing', `${result.durationMs} ms, ${error.attempts} attempt${error.attempts === 1 ? '' : 's'}`],
    ['token endpoint', tokenUrl],
    ['hint', out.style.bold(error.hint)],
  );
  printFields(out, rows, '  ');
  printWarnings(out, warnings);
}

function printWarnings(out: Output, warnings: readonly string[]): void {
  for (const warning of warnings) out.print(`${out.style.warn('!')} ${warning}`);
}
