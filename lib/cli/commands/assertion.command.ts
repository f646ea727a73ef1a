import { decodeJwt, decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { certificateThumbprint, normalizeThumbprint } from '../../credentials/thumbprint.util.js';
import type { PlatformAuthOptions } from '../../options/platform-auth-options.interface.js';
import type { ResolvedPlatformAuthConfig } from '../../platform-auth.configuration.js';
import {
  CLAIM_RULE_LABELS,
  evaluateClaimRules,
  type ClaimRuleOutcome,
} from '../../testing/emulator/emulator.claim-rules.js';
import { flag, type CheckResult, type CheckStatus, type Command, type CommandContext } from '../cli.command.js';
import { ENV_FILE_OPTION, requireConfiguration, warningChecks } from '../cli.environment.js';
import { commandLineRuntime, warningCollector } from '../cli.exchange.js';
import { countChecks, printChecks, printFields, summaryLine } from '../cli.output.js';

export const assertionCommand: Command = {
  name: 'assertion',
  synopsis: '[--raw] [--env-file FILE]',
  description: [
    "Builds a client assertion with the module's own AssertionSigner, from the same PLATFORM_* variables, and",
    'prints its decoded header and claims with every rule of docs/platform-contract.md#assertion checked locally by',
    "the emulator's rules, the signature verified against the certificate: an offline replacement for an online JWT",
    'debugger. Whether the integration is Active and whether the jti was seen are for the platform to judge. Nothing',
    'is sent anywhere.',
  ].join('\n'),
  options: {
    raw: {
      type: 'boolean',
      description:
        'print only the signed JWT on stdout (checks still run; failures go to stderr). It can be exchanged for a token until it expires: treat it as a secret',
    },
    ...ENV_FILE_OPTION,
  },
  run,
};

const TIME_CLAIMS = ['iat', 'nbf', 'exp'] as const;

async function run(context: CommandContext): Promise<number> {
  const out = context.out;
  const configuration = await requireConfiguration(context);
  if (!configuration) return 1;
  const { config, options } = configuration;
  // Configuration warnings are reported from `config.warnings`; signing itself logs nothing.
  const runtime = await commandLineRuntime(config, warningCollector([]));
  const jwt = await runtime.signer.createAssertion().finally(() => runtime.onApplicationShutdown());
  const header = decodeProtectedHeader(jwt);
  const claims = decodeJwt(jwt);
  const checks = await checkAssertion(jwt, header, claims, config, options, context.now());
  const ok = checks.every((check) => check.status !== 'fail');
  const raw = flag(context, 'raw');

  if (out.json) {
    out.printJson({ ok, header, claims, checks, warnings: config.warnings, ...(raw ? { jwt } : {}) });
    return ok ? 0 : 1;
  }
  if (raw) {
    out.print(jwt);
    const expiry = typeof claims.exp === 'number' ? ` until ${isoSeconds(claims.exp)}` : '';
    out.note(
      `This assertion can be exchanged for an access token${expiry}: treat it as a secret, never paste it into an online JWT debugger.`,
    );
    for (const check of checks.filter((c) => c.status === 'fail')) out.note(`✗ ${check.label}: ${check.detail}`);
    return ok ? 0 : 1;
  }

  out.print(
    `Client assertion signed by the module's AssertionSigner from the PLATFORM_* variables (the JWT is not shown; --raw prints it).`,
  );
  out.print();
  out.print(out.style.bold('Header'));
  printFields(
    out,
    Object.entries(header).map(([name, value]) => [name, JSON.stringify(value)]),
    '  ',
  );
  out.print(out.style.bold('Claims'));
  printFields(
    out,
    Object.entries(claims).map(([name, value]) => [name, describeClaim(name, value, claims)]),
    '  ',
  );
  out.print();
  out.print(out.style.bold('Assertion rules, checked locally'));
  const all = [...checks, ...warningChecks(config.warnings)];
  printChecks(out, all);
  out.print();
  out.print(summaryLine(countChecks(all), out.style));
  return ok ? 0 : 1;
}

/**
 * Every rule of docs/platform-contract.md#assertion on the decoded JWT, judged by the emulator's own rules (one copy, shared with its token
 * endpoint) against this configuration: the certificate's thumbprint, the machineId, the audience, this machine's
 * clock. Whether the integration is Active and whether the jti was seen only the platform knows: those are skipped.
 */
async function checkAssertion(
  jwt: string,
  header: ProtectedHeaderParameters,
  claims: JWTPayload,
  config: ResolvedPlatformAuthConfig,
  options: PlatformAuthOptions,
  now: number,
): Promise<CheckResult[]> {
  const { certificate, key, thumbprintAlgorithm } = config.credentials;
  const expectedIss = certificate
    ? certificateThumbprint(certificate, thumbprintAlgorithm)
    : normalizeThumbprint(options.thumbprint ?? '');
  const issSource = certificate
    ? `the certificate's ${thumbprintAlgorithm} thumbprint ${expectedIss}`
    : `PLATFORM_CERT_THUMBPRINT ${expectedIss} (no certificate is configured to compute it from)`;
  const audSource = options.audience !== undefined ? 'PLATFORM_AUDIENCE' : 'default: the host of PLATFORM_BASE_URL';
  const issuer = {
    thumbprint: expectedIss,
    machineId: config.machineId,
    publicKey: certificate?.publicKey ?? key.publicKey,
  };
  const verdicts = await evaluateClaimRules(
    { jwt, header: { ...header }, claims: { ...claims } },
    {
      audience: config.audience,
      now,
      thumbprintAlgorithm,
      findIssuer: (iss) => (iss.toUpperCase() === expectedIss ? issuer : undefined),
    },
  );
  return verdicts.map((verdict) => {
    const check: CheckResult = {
      id: verdict.rule,
      status: CHECK_STATUS[verdict.outcome],
      label: CLAIM_RULE_LABELS[verdict.rule],
      detail: verdict.message,
    };
    if (verdict.rule === 'iss') {
      return {
        ...check,
        detail: verdict.outcome === 'ok' ? `is ${issSource}` : `${verdict.message}; expected ${issSource}`,
      };
    }
    if (verdict.rule === 'aud') return { ...check, detail: `${verdict.message} (${audSource})` };
    if (verdict.rule === 'signature' && verdict.outcome === 'ok' && !certificate) {
      return {
        ...check,
        status: 'warn',
        detail:
          "verifies against the private key's public half; no certificate is configured to check the registered one",
        fix: 'configure the registered certificate (PLATFORM_CERTIFICATE_PATH) so that the pair is checked',
      };
    }
    return check;
  });
}

const CHECK_STATUS: Readonly<Record<ClaimRuleOutcome, CheckStatus>> = {
  ok: 'pass',
  failed: 'fail',
  'not-checked': 'skip',
};

function describeClaim(name: string, value: unknown, claims: JWTPayload): string {
  if (typeof value !== 'number' || !(TIME_CLAIMS as readonly string[]).includes(name)) return JSON.stringify(value);
  const relative = name === 'exp' && typeof claims.iat === 'number' ? ` (iat + ${value - claims.iat} s)` : '';
  return `${value}  ${isoSeconds(value)}${relative}`;
}

function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
