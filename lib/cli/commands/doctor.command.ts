import type { PlatformAuthOptions } from '../../options/platform-auth-options.interface.js';
import { DEFAULT_CLOCK_MARGIN_SECONDS, DEFAULT_TOKEN_PATH } from '../../options/options.constants.js';
import { ConfigReport } from '../../options/config.report.js';
import { resolveClockSettings, resolveEndpoint } from '../../options/options.resolver.js';
import { effectiveClockMargin } from '../../token/assertion.signer.js';
import type { ResolvedPlatformAuthConfig } from '../../platform-auth.configuration.js';
import { describeClockSkew, isSkewed, offsetSeconds } from '../../token/token-exchange.hints.js';
import type { CheckResult, Command, CommandContext } from '../cli.command.js';
import {
  byGroup,
  check,
  configurationChecks,
  loadCredentialsOnTheirOwn,
  type Findings,
} from './doctor-configuration.checks.js';
import { describeCertificate, validityText } from '../certificate-info.util.js';
import { PROBE_METHOD, probeEndpoint, type ProbeResult } from '../endpoint-probe.util.js';
import { ENV_FILE_OPTION, configurationEnv, resolveConfiguration } from '../cli.environment.js';
import { unknownVariableWarnings } from '../../options/env-variables.js';
import { exchangeOnce } from '../cli.exchange.js';
import { countChecks, printChecks, signedSeconds, summaryLine } from '../cli.output.js';
import { isNotRegisteredRefusal, thumbprintPrefix } from '../../token/next-pair.switch.js';

export const doctorCommand: Command = {
  name: 'doctor',
  synopsis: '[--env-file FILE]',
  description: [
    'Checks every cause of docs/platform-contract.md#failure-causes, one line each with its fix: the private key',
    '(loads, RSA-2048), the certificate (parses, matches the key, validity and days left), the thumbprint, machineId,',
    'audience and base URL (https; http only on loopback), then the token endpoint (reachable), the clock (offset from',
    `the platform's Date header; beyond the clock margin, ${DEFAULT_CLOCK_MARGIN_SECONDS} s by default, fails) and one real token exchange, whose refusal is translated into`,
    "its likely cause. The configuration checks are the module's own start-up checks. Exit code 1 when any fails.",
  ].join('\n'),
  options: { ...ENV_FILE_OPTION },
  run,
};

const PROBE_TIMEOUT_MS = 5_000;

async function run(context: CommandContext): Promise<number> {
  const now = context.now();
  const { options, config, problems = [] } = await resolveConfiguration(context, now);
  // A resolved configuration's warnings include the typos; a refused one's error carries only problems.
  const typos = config ? [] : unknownVariableWarnings(configurationEnv(context));
  // PlatformAuthConfigError carries only problems: load the credentials on their own for the warnings, and for
  // the details of the parts that are fine.
  const credentials = config
    ? { loaded: config.credentials, warnings: config.warnings }
    : await loadCredentialsOnTheirOwn(options, now);
  // The next pair's problems get a check of their own.
  const isNext = (problem: { option: string }) => problem.option.startsWith('next');
  const nextProblems = problems.filter(isNext);
  const findings: Findings = {
    problems: byGroup(problems.filter((problem) => !isNext(problem))),
    warnings: byGroup([...typos, ...credentials.warnings]),
  };
  const checks = configurationChecks(options, config, credentials.loaded, findings, now);
  const nextCheck = nextPairCheck(options, config, nextProblems, now);
  if (nextCheck) checks.push(nextCheck);
  try {
    checks.push(...(await platformChecks(options, config)));
  } finally {
    // The exchange's runtime closed it already when there was one; closing twice is fine.
    await credentials.loaded?.key.close();
  }

  const counts = countChecks(checks);
  const out = context.out;
  if (out.json) {
    out.printJson({ ok: counts.failed === 0, checks, summary: counts });
  } else {
    out.print('Checking the system integration configured by the PLATFORM_* variables (docs/platform-contract.md):');
    out.print();
    printChecks(out, checks);
    out.print();
    out.print(summaryLine(counts, out.style));
  }
  return counts.failed === 0 ? 0 : 1;
}

/**
 * The token endpoint, the clock and the exchange. Exported so a test can give options the environment cannot express
 * (a `tokenPath`).
 */
export async function platformChecks(
  options: PlatformAuthOptions,
  config: ResolvedPlatformAuthConfig | undefined,
): Promise<CheckResult[]> {
  // The module's own URL and clock margin, also when other settings fail, so the network and the clock are checked
  // whatever else is wrong. The configuration checks have reported the problems already; this report is dropped.
  const report = new ConfigReport();
  const tokenUrl = config?.tokenUrl ?? resolveEndpoint(options, report)?.tokenUrl;
  const clockSettings = config ?? resolveClockSettings(options, report);
  if (tokenUrl === undefined) {
    const reason = 'not checked: PLATFORM_BASE_URL is not usable';
    return [
      check('endpoint', 'skip', 'Token endpoint', reason),
      check('clock', 'skip', 'Clock', reason),
      check('exchange', 'skip', 'Token exchange', 'not attempted: fix the configuration first'),
    ];
  }
  const probe = await probeEndpoint(tokenUrl, PROBE_TIMEOUT_MS);
  const tolerance = clockSettings && effectiveClockMargin(clockSettings);
  const checks = [endpointCheck(tokenUrl, probe), clockCheck(probe, tolerance)];
  if (!probe.reachable) {
    checks.push(check('exchange', 'skip', 'Token exchange', 'not attempted: the token endpoint is unreachable'));
  } else if (!config) {
    checks.push(
      check('exchange', 'skip', 'Token exchange', 'not attempted: fix the configuration problems above first'),
    );
  } else if (config.nextCredentials) {
    checks.push(...(await bothPairsChecks(config)));
  } else {
    const result = await exchangeOnce(config);
    checks.push(
      result.ok
        ? check(
            'exchange',
            'pass',
            'Token exchange',
            `the platform issued a ${result.tokenType} token, expires_in ${result.expiresInSeconds} s, in ${result.durationMs} ms (the token is not shown)`,
          )
        : check('exchange', 'fail', 'Token exchange', result.error.summary, result.error.hint),
      ...result.warnings.map((warning) => check('exchange', 'warn', 'Token exchange', warning)),
    );
  }
  return checks;
}

function endpointCheck(tokenUrl: string, probe: ProbeResult): CheckResult {
  if (probe.reachable && probe.status === 404) {
    // A server answered, but not a token endpoint: the exchange would fail with this same 404.
    return check(
      'endpoint',
      'fail',
      'Token endpoint',
      `not found: ${tokenUrl} answered a ${PROBE_METHOD} with HTTP 404 in ${probe.durationMs} ms; no token endpoint is there`,
      `set PLATFORM_BASE_URL to https://{platform_domain} only, without a path; the token endpoint is ${DEFAULT_TOKEN_PATH} below it`,
    );
  }
  if (probe.reachable) {
    return check(
      'endpoint',
      'pass',
      'Token endpoint',
      `reachable: ${tokenUrl} answered a ${PROBE_METHOD} with HTTP ${probe.status} in ${probe.durationMs} ms`,
    );
  }
  return check(
    'endpoint',
    'fail',
    'Token endpoint',
    `unreachable: ${tokenUrl} (${probe.code})`,
    networkFix(probe.code),
  );
}

/** The exchange's own rule: the assertion's clock margin is the tolerance (`isSkewed`, shared with its hints). */
function clockCheck(probe: ProbeResult, toleranceSeconds: number | undefined): CheckResult {
  if (!probe.reachable) return check('clock', 'skip', 'Clock', 'not checked: the platform did not answer');
  if (toleranceSeconds === undefined)
    return check('clock', 'skip', 'Clock', 'not checked: PLATFORM_CLOCK_MARGIN_SECONDS is not usable');
  const offset = offsetSeconds(probe.clockOffsetMs);
  if (offset === undefined) {
    return check(
      'clock',
      'warn',
      'Clock',
      "the platform's answer has no Date header: the offset cannot be measured",
      'check the system time against a reliable source (NTP)',
    );
  }
  const detail = `platform ${signedSeconds(offset)} against the local clock (Date header; the clock margin tolerates ±${toleranceSeconds} s)`;
  return isSkewed(offset, toleranceSeconds)
    ? check('clock', 'fail', 'Clock', detail, describeClockSkew(offset))
    : check('clock', 'pass', 'Clock', detail);
}

function networkFix(code: string): string {
  if (code === 'ECONNREFUSED')
    return 'nothing listens at that host and port: check the scheme, host and port of PLATFORM_BASE_URL';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return 'the host name does not resolve: check PLATFORM_BASE_URL and DNS';
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') {
    return `no answer within ${PROBE_TIMEOUT_MS / 1000} s: check firewalls, proxies (HTTPS_PROXY, NO_PROXY) and PLATFORM_BASE_URL`;
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO|TLS|SSL/.test(code)) {
    return "the platform's TLS certificate is not trusted: behind a TLS-inspecting proxy, add its CA with NODE_EXTRA_CA_CERTS";
  }
  return 'check PLATFORM_BASE_URL, DNS, proxies and firewalls';
}

/** The next pair's start-up checks, when one is configured. */
function nextPairCheck(
  options: PlatformAuthOptions,
  config: ResolvedPlatformAuthConfig | undefined,
  problems: readonly { setting: string; message: string }[],
  now: number,
): CheckResult | undefined {
  const given = [
    options.next?.privateKey,
    options.next?.privateKeyPath,
    options.next?.privateKeyUri,
    options.next?.certificate,
    options.next?.certificatePath,
  ].some((value) => value !== undefined);
  if (!given) return undefined;
  if (problems.length > 0) {
    return check(
      'next-pair',
      'fail',
      'Next pair',
      problems.map((problem) => `${problem.setting}: ${problem.message}`).join('; '),
      'make the next pair with npx platform-auth keygen --next, and configure its key and certificate together',
    );
  }
  const next = config?.nextCredentials;
  if (!next) return check('next-pair', 'skip', 'Next pair', 'not checked: fix the configuration problems above first');
  // The current pair's format (ISO 8601, UTC, days left), so the two certificates' dates compare at a glance.
  const notAfter = next.certificate ? `, ${validityText(describeCertificate(next.certificate, now), now)}` : '';
  return check(
    'next-pair',
    'pass',
    'Next pair',
    `thumbprint ${next.thumbprint}${notAfter}; it differs from the current pair and passes every start-up check`,
  );
}

/**
 * With a next pair: one exchange signed with each pair on its own, and which one the platform accepts now. Before
 * the portal step the current pair is accepted and the next one "not registered"; after it, the other way round.
 */
async function bothPairsChecks(config: ResolvedPlatformAuthConfig): Promise<CheckResult[]> {
  const next = config.nextCredentials!;
  const current = await exchangeOnce({ ...config, nextCredentials: undefined });
  const withNext = await exchangeOnce({ ...config, credentials: next, nextCredentials: undefined });
  const label = (which: string, thumbprint: string) =>
    `Token exchange, ${which} pair (${thumbprintPrefix(thumbprint)})`;
  const accepted = (result: Awaited<ReturnType<typeof exchangeOnce>>) =>
    result.ok ? `the platform accepts it: it issued a ${result.tokenType} token in ${result.durationMs} ms` : '';
  const checks: CheckResult[] = [];
  const currentLabel = label('current', config.credentials.thumbprint);
  const nextLabel = label('next', next.thumbprint);
  if (current.ok) {
    checks.push(check('exchange', 'pass', currentLabel, accepted(current)));
  } else if (withNext.ok && isNotRegisteredRefusal(current.error)) {
    checks.push(
      check(
        'exchange',
        'warn',
        currentLabel,
        `refused as not registered: the portal holds the next certificate now (${current.error.summary})`,
        'promote the files: the next pair becomes the current pair (PLATFORM_PRIVATE_KEY_PATH, PLATFORM_CERTIFICATE_PATH), PLATFORM_NEXT_* a new next pair or nothing',
      ),
    );
  } else {
    checks.push(check('exchange', 'fail', currentLabel, current.error.summary, current.error.hint));
  }
  if (withNext.ok) {
    checks.push(
      check('exchange-next', 'pass', nextLabel, `${accepted(withNext)}; the platform accepts the next pair now`),
    );
  } else if (current.ok && isNotRegisteredRefusal(withNext.error)) {
    checks.push(
      check(
        'exchange-next',
        'pass',
        nextLabel,
        'not registered yet, as expected before the portal step: the module switches to it within an exchange once the portal holds it',
      ),
    );
  } else {
    checks.push(check('exchange-next', 'fail', nextLabel, withNext.error.summary, withNext.error.hint));
  }
  for (const warning of [...current.warnings, ...withNext.warnings]) {
    checks.push(check('exchange', 'warn', 'Token exchange', warning));
  }
  return checks;
}
