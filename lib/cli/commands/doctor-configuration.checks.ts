import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigReport, settingName } from '../../options/config.report.js';
import { openCredentials, type LoadedCredentials } from '../../credentials/credentials.loader.js';
import { normalizePem } from '../../credentials/pem.util.js';
import { certificateThumbprint, normalizeThumbprint } from '../../credentials/thumbprint.util.js';
import type { ReadPlatformAuthOptions } from '../../options/options.read.js';
import { pairSources } from '../../credentials/key-pair.sources.js';
import type { ConfigProblem } from '../../platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from '../../platform-auth.configuration.js';
import { describeCertificate, validityText } from '../certificate-info.util.js';
import type { CheckResult, CheckStatus } from '../cli.command.js';

// doctor's configuration half: the module's own start-up findings, each put on the line of the part it concerns.

/** Configuration checks and the options whose problems they report, so a problem lands on its line by its setting. */
const GROUPS = {
  key: {
    label: 'Private key',
    options: ['key.privateKey', 'key.privateKeyPath', 'key.passphrase', 'key.privateKeyUri', 'key.signer'],
    fix: 'point PLATFORM_PRIVATE_KEY_PATH at the RSA-2048 PEM key whose certificate is registered, or PLATFORM_PRIVATE_KEY_URI at the key in its PKCS#11 token (or run platform-auth keygen and register the new certificate)',
  },
  certificate: {
    label: 'Certificate',
    options: ['key.certificate', 'key.certificatePath'],
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

export interface Findings {
  readonly problems: Readonly<Record<GroupName | 'other', readonly ConfigProblem[]>>;
  readonly warnings: Readonly<Record<GroupName | 'other', readonly ConfigProblem[]>>;
}

export async function loadCredentialsOnTheirOwn(
  options: ReadPlatformAuthOptions,
  now: number,
): Promise<{ loaded?: LoadedCredentials; warnings: readonly ConfigProblem[] }> {
  const report = new ConfigReport();
  const loaded = await openCredentials(pairSources(options, 'key')!, now, report);
  return { loaded, warnings: report.warnings };
}

export function byGroup(findings: readonly ConfigProblem[]): Record<GroupName | 'other', ConfigProblem[]> {
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

export function check(
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

export function configurationChecks(
  options: ReadPlatformAuthOptions,
  config: ResolvedPlatformAuthConfig | undefined,
  credentials: LoadedCredentials | undefined,
  findings: Findings,
  now: number,
): CheckResult[] {
  const checks: CheckResult[] = [];
  const key = findingLines('private-key', 'key', findings);
  if (!key.failed) {
    const source = settingName(
      options.key?.privateKeyUri !== undefined
        ? 'key.privateKeyUri'
        : options.key?.privateKeyPath !== undefined
          ? 'key.privateKeyPath'
          : 'key.privateKey',
    );
    const key = credentials?.key;
    const detail =
      key && key.source !== 'pem'
        ? `signs, and its test signature verifies with the certificate: ${key.description}`
        : `loads: ${key ? `an RSA ${key.modulusBits}-bit key` : 'an RSA key of at least 2048 bits'}, from ${source}`;
    checks.push(check('private-key', 'pass', GROUPS.key.label, detail));
  }
  checks.push(...key.lines);

  const certificateSource =
    options.key?.certificatePath !== undefined
      ? 'key.certificatePath'
      : options.key?.certificate !== undefined
        ? 'key.certificate'
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
function readConfiguredCertificate(options: ReadPlatformAuthOptions): X509Certificate | undefined {
  try {
    const { certificate, certificatePath } = options.key ?? {};
    const text = certificatePath !== undefined ? readFileSync(certificatePath, 'utf8') : certificate;
    return text === undefined ? undefined : new X509Certificate(normalizePem(text));
  } catch {
    return undefined;
  }
}
