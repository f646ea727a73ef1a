import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigReport, settingName } from '../../options/config.report.js';
import { loadCredentials, type LoadedCredentials } from '../../credentials/credentials.loader.js';
import { normalizePem } from '../../credentials/pem.util.js';
import { certificateThumbprint, normalizeThumbprint } from '../../credentials/thumbprint.util.js';
import type { PlatformAuthOptions } from '../../options/platform-auth-options.interface.js';
import { CLOCK_SKEW_TOLERANCE_SECONDS, DEFAULT_TOKEN_PATH } from '../../options/options.constants.js';
import type { ConfigProblem } from '../../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../../options/options.resolver.js';
import { describeClockSkew, isSkewed } from '../../token/token-exchange.hints.js';
import { describeCertificate, validityText } from '../certificate-info.util.js';
import type { CheckResult, CheckStatus, Command, CommandContext } from '../cli.command.js';
import { probeEndpoint, type ProbeResult } from '../endpoint-probe.util.js';
import { configurationEnv, ENV_FILE_OPTION, resolveConfiguration } from '../cli.environment.js';
import { exchangeOnce } from '../cli.exchange.js';
import { countChecks, printChecks, signedSeconds, summaryLine } from '../cli.output.js';

export const doctorCommand: Command = {
  name: 'doctor',
  synopsis: '[--env-file FILE]',
  description: [
    'Checks every cause of docs/platform-contract.md#failure-causes, one line each with its fix: the private key',
    '(loads, RSA-2048), the certificate (parses, matches the key, validity and days left), the thumbprint, machineId,',
    'audience and base URL (https; http only on loopback), then the token endpoint (reachable), the clock (offset from',
    "the platform's Date header, more than 30 s fails) and one real token exchange, whose refusal is translated into",
    "its likely cause. The configuration checks are the module's own start-up checks. Exit code 1 when any fails.",
  ].join('\n'),
  options: { ...ENV_FILE_OPTION },
  run,
};

const PROBE_TIMEOUT_MS = 5_000;

/** Configuration checks and the options whose problems they report, so a problem lands on its line by its setting. */
const GROUPS = {
  key: {
    label: 'Private key',
    options: ['privateKey', 'privateKeyPath', 'privateKeyPassphrase'],
    fix: 'point PLATFORM_PRIVATE_KEY_PATH at the RSA-2048 PEM key whose certificate is registered (or run platform-auth keygen and register the new certificate)',
  },
  certificate: {
    label: 'Certificate',
    options: ['certificate', 'certificatePath'],
    fix: 'point PLATFORM_CERTIFICATE_PATH at the publickey.cer registered on the system integration and made from this key; when it has expired, run platform-auth keygen and register the new one',
  },
  thumbprint: {
    label: 'Thumbprint',
    options: ['thumbprint', 'thumbprintAlgorithm'],
    fix: 'unset PLATFORM_CERT_THUMBPRINT (it is computed from the certificate), or copy the thumbprint the portal shows',
  },
  machineId: {
    label: 'machineId',
    options: ['machineId'],
    fix: 'copy the machineId the portal shows for the system integration into PLATFORM_MACHINE_ID',
  },
  audience: {
    label: 'Audience',
    options: ['audience'],
    fix: 'set PLATFORM_AUDIENCE to the domain the platform expects, or unset it to use the host of PLATFORM_BASE_URL',
  },
  baseUrl: {
    label: 'Base URL',
    options: ['baseUrl'],
    fix: 'set PLATFORM_BASE_URL to https://{platform_domain} (plain http only for localhost or 127.0.0.1)',
  },
} as const;

type GroupName = keyof typeof GROUPS;

interface Findings {
  readonly problems: Readonly<Record<GroupName | 'other', readonly ConfigProblem[]>>;
  readonly warnings: Readonly<Record<GroupName | 'other', readonly ConfigProblem[]>>;
}

async function run(context: CommandContext): Promise<number> {
  const now = context.now();
  const { options, config, problems = [] } = resolveConfiguration(configurationEnv(context), now);
  // PlatformAuthConfigError carries only problems: load the credentials on their own for the warnings, and for
  // the details of the parts that are fine.
  const credentials = config
    ? { loaded: config.credentials, warnings: config.warnings }
    : loadCredentialsOnTheirOwn(options, now);
  const findings: Findings = { problems: byGroup(problems), warnings: byGroup(credentials.warnings) };
  const checks = configurationChecks(options, config, credentials.loaded, findings, now);
  checks.push(...(await platformChecks(options, config, findings)));

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

function loadCredentialsOnTheirOwn(
  options: PlatformAuthOptions,
  now: number,
): { loaded?: LoadedCredentials; warnings: readonly ConfigProblem[] } {
  const report = new ConfigReport();
  return { loaded: loadCredentials(options, now, report), warnings: report.warnings };
}

function byGroup(findings: readonly ConfigProblem[]): Record<GroupName | 'other', ConfigProblem[]> {
  const grouped: Record<GroupName | 'other', ConfigProblem[]> = {
    key: [],
    certificate: [],
    thumbprint: [],
    machineId: [],
    audience: [],
    baseUrl: [],
    other: [],
  };
  for (const finding of findings) {
    const name = (Object.keys(GROUPS) as GroupName[]).find((group) =>
      (GROUPS[group].options as readonly string[]).includes(finding.option),
    );
    grouped[name ?? 'other'].push(finding);
  }
  return grouped;
}

function check(
  id: string,
  status: CheckStatus,
  label: string,
  detail: string,
  fix?: string,
  setting?: string,
): CheckResult {
  return { id, status, label, detail, ...(setting ? { setting } : {}), ...(fix ? { fix } : {}) };
}

/** One ✗ line per problem, then one ! line per warning, for a group. */
function findingLines(id: string, group: GroupName, findings: Findings): { failed: boolean; lines: CheckResult[] } {
  const { label, fix } = GROUPS[group];
  const problems = findings.problems[group].map((p) =>
    check(id, 'fail', label, `${p.setting}: ${p.message}`, fix, p.setting),
  );
  const warnings = findings.warnings[group].map((w) =>
    check(id, 'warn', label, `${w.setting}: ${w.message}`, fix, w.setting),
  );
  return { failed: problems.length > 0, lines: [...problems, ...warnings] };
}

function configurationChecks(
  options: PlatformAuthOptions,
  config: ResolvedPlatformAuthConfig | undefined,
  credentials: LoadedCredentials | undefined,
  findings: Findings,
  now: number,
): CheckResult[] {
  const checks: CheckResult[] = [];
  const key = findingLines('private-key', 'key', findings);
  if (!key.failed) {
    const source = settingName(options.privateKeyPath !== undefined ? 'privateKeyPath' : 'privateKey');
    const bits = credentials?.privateKey.asymmetricKeyDetails?.modulusLength;
    const what = bits ? `an RSA ${bits}-bit key` : 'an RSA key of at least 2048 bits';
    checks.push(check('private-key', 'pass', GROUPS.key.label, `loads: ${what}, from ${source}`));
  }
  checks.push(...key.lines);

  const certificateSource =
    options.certificatePath !== undefined
      ? 'certificatePath'
      : options.certificate !== undefined
        ? 'certificate'
        : undefined;
  const certificate = findingLines('certificate', 'certificate', findings);
  const x509 =
    certificate.failed || !certificateSource
      ? undefined
      : (credentials?.certificate ?? readConfiguredCertificate(options));
  if (!certificate.failed && !certificateSource) {
    checks.push(
      check(
        'certificate',
        'warn',
        GROUPS.certificate.label,
        'none configured: iss comes from PLATFORM_CERT_THUMBPRINT, and the key pair and validity cannot be checked',
        'set PLATFORM_CERTIFICATE_PATH to the registered publickey.cer',
      ),
    );
  } else if (!certificate.failed) {
    const info = x509 ? describeCertificate(x509, now) : undefined;
    checks.push(
      check(
        'certificate',
        'pass',
        GROUPS.certificate.label,
        `${info?.subject ?? 'an X.509 certificate'}, parses, from ${settingName(certificateSource!)}`,
      ),
      key.failed
        ? check('key-pair', 'skip', 'Key pair', 'not checked: the private key did not load')
        : check('key-pair', 'pass', 'Key pair', 'the certificate was made from this private key'),
      check('validity', 'pass', 'Validity', info ? validityText(info, now) : 'valid now'),
    );
  }
  checks.push(...certificate.lines);

  const thumbprint = findingLines('thumbprint', 'thumbprint', findings);
  if (!thumbprint.failed) {
    const algorithm = credentials?.thumbprintAlgorithm ?? options.thumbprintAlgorithm ?? 'sha1';
    const computed = x509 ? certificateThumbprint(x509, algorithm) : undefined;
    const configured = options.thumbprint === undefined ? undefined : normalizeThumbprint(options.thumbprint);
    if (configured && computed) {
      checks.push(
        check(
          'thumbprint',
          'pass',
          GROUPS.thumbprint.label,
          `PLATFORM_CERT_THUMBPRINT matches the certificate's ${algorithm} thumbprint ${computed}`,
        ),
      );
    } else if (configured && certificateSource) {
      checks.push(check('thumbprint', 'skip', GROUPS.thumbprint.label, 'not compared: the certificate did not load'));
    } else if (configured) {
      checks.push(
        check(
          'thumbprint',
          'pass',
          GROUPS.thumbprint.label,
          `iss = ${configured}, from PLATFORM_CERT_THUMBPRINT; check it against the portal`,
        ),
      );
    } else if (computed) {
      checks.push(
        check(
          'thumbprint',
          'pass',
          GROUPS.thumbprint.label,
          `iss = ${computed}, the certificate's ${algorithm} thumbprint; the portal must show the same`,
        ),
      );
    }
  }
  checks.push(...thumbprint.lines);

  const machineId = findingLines('machine-id', 'machineId', findings);
  if (!machineId.failed) checks.push(check('machine-id', 'pass', GROUPS.machineId.label, `sub = ${options.machineId}`));
  checks.push(...machineId.lines);

  const baseUrl = findingLines('base-url', 'baseUrl', findings);
  const audience = findingLines('audience', 'audience', findings);
  if (!audience.failed) {
    const value = config?.audience ?? options.audience ?? (baseUrl.failed ? undefined : new URL(options.baseUrl).host);
    const source = options.audience !== undefined ? 'PLATFORM_AUDIENCE' : 'default: the host of PLATFORM_BASE_URL';
    checks.push(
      value === undefined
        ? check('audience', 'skip', GROUPS.audience.label, 'not known: it defaults to the host of PLATFORM_BASE_URL')
        : check('audience', 'pass', GROUPS.audience.label, `aud = ${value} (${source})`),
    );
  }
  checks.push(...audience.lines);

  if (!baseUrl.failed) {
    const url = new URL(config?.baseUrl ?? options.baseUrl);
    const note = url.protocol === 'http:' ? ' (plain http: accepted because the host is loopback)' : '';
    checks.push(check('base-url', 'pass', GROUPS.baseUrl.label, `${url.href.replace(/\/+$/, '')}${note}`));
  }
  checks.push(...baseUrl.lines);

  for (const problem of findings.problems.other)
    checks.push(
      check('settings', 'fail', 'Settings', `${problem.setting}: ${problem.message}`, undefined, problem.setting),
    );
  for (const warning of findings.warnings.other)
    checks.push(
      check('settings', 'warn', 'Settings', `${warning.setting}: ${warning.message}`, undefined, warning.setting),
    );
  return checks;
}

/** Display only: the library already found this certificate fine but, failing elsewhere, returned no credentials. */
function readConfiguredCertificate(options: PlatformAuthOptions): X509Certificate | undefined {
  try {
    const text =
      options.certificatePath !== undefined ? readFileSync(options.certificatePath, 'utf8') : options.certificate;
    return text === undefined ? undefined : new X509Certificate(normalizePem(text));
  } catch {
    return undefined;
  }
}

async function platformChecks(
  options: PlatformAuthOptions,
  config: ResolvedPlatformAuthConfig | undefined,
  findings: Findings,
): Promise<CheckResult[]> {
  // The same URL the module builds (base URL without trailing slashes, then the token path), also when other
  // settings fail, so the network and the clock are checked whatever else is wrong.
  const tokenUrl =
    config?.tokenUrl ??
    (findings.problems.baseUrl.length > 0
      ? undefined
      : new URL(options.baseUrl).href.replace(/\/+$/, '') + DEFAULT_TOKEN_PATH);
  if (tokenUrl === undefined) {
    const reason = 'not checked: PLATFORM_BASE_URL is not usable';
    return [
      check('endpoint', 'skip', 'Token endpoint', reason),
      check('clock', 'skip', 'Clock', reason),
      check('exchange', 'skip', 'Token exchange', 'not attempted: fix the configuration first'),
    ];
  }
  const probe = await probeEndpoint(tokenUrl, PROBE_TIMEOUT_MS);
  const checks = [endpointCheck(tokenUrl, probe), clockCheck(probe)];
  if (!probe.reachable) {
    checks.push(check('exchange', 'skip', 'Token exchange', 'not attempted: the token endpoint is unreachable'));
  } else if (!config) {
    checks.push(
      check('exchange', 'skip', 'Token exchange', 'not attempted: fix the configuration problems above first'),
    );
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
  if (probe.reachable) {
    return check(
      'endpoint',
      'pass',
      'Token endpoint',
      `reachable: ${tokenUrl} answered a GET with HTTP ${probe.status} in ${probe.durationMs} ms`,
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

function clockCheck(probe: ProbeResult): CheckResult {
  if (!probe.reachable) return check('clock', 'skip', 'Clock', 'not checked: the platform did not answer');
  if (probe.clockOffsetMs === undefined) {
    return check(
      'clock',
      'warn',
      'Clock',
      "the platform's answer has no Date header: the offset cannot be measured",
      'check the system time against a reliable source (NTP)',
    );
  }
  const offset = Math.round(probe.clockOffsetMs / 1000);
  const detail = `platform ${signedSeconds(offset)} against the local clock (Date header; tolerance ±${CLOCK_SKEW_TOLERANCE_SECONDS} s)`;
  return isSkewed(offset)
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
