import { createPublicKey } from 'node:crypto';
import { compactVerify, decodeJwt, decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { AssertionSigner } from '../../token/assertion.signer.js';
import { systemClock } from '../../platform-auth.clock.js';
import { certificateThumbprint, normalizeThumbprint } from '../../credentials/thumbprint.util.js';
import type { PlatformAuthOptions } from '../../options/platform-auth-options.interface.js';
import { MAX_ASSERTION_LIFETIME_SECONDS } from '../../options/options.constants.js';
import type { ResolvedPlatformAuthConfig } from '../../options/options.resolver.js';
import { flag, type CheckResult, type Command, type CommandContext } from '../cli.command.js';
import { ENV_FILE_OPTION, requireConfiguration, warningChecks } from '../cli.environment.js';
import { countChecks, printChecks, printFields, summaryLine } from '../cli.output.js';

export const assertionCommand: Command = {
  name: 'assertion',
  synopsis: '[--raw] [--env-file FILE]',
  description: [
    "Builds a client assertion with the module's own AssertionSigner, from the same PLATFORM_* variables, and",
    'prints its decoded header and claims with every rule of docs/platform-contract.md#assertion checked locally,',
    'the signature verified against the certificate: an offline replacement for an online JWT debugger. Nothing is',
    'sent anywhere.',
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

const STRING_CLAIMS = ['jti', 'iss', 'sub', 'aud'] as const;
const TIME_CLAIMS = ['iat', 'nbf', 'exp'] as const;

async function run(context: CommandContext): Promise<number> {
  const out = context.out;
  const configuration = requireConfiguration(context);
  if (!configuration) return 1;
  const { config, options } = configuration;
  const jwt = await new AssertionSigner(config, systemClock).createAssertion();
  const header = decodeProtectedHeader(jwt);
  const claims = decodeJwt(jwt);
  const checks = await checkAssertion(jwt, header, claims, config, options, Math.floor(context.now() / 1000));
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

/** Each rule of docs/platform-contract.md#assertion against the decoded JWT, however the signer built it. */
async function checkAssertion(
  jwt: string,
  header: ProtectedHeaderParameters,
  claims: JWTPayload,
  config: ResolvedPlatformAuthConfig,
  options: PlatformAuthOptions,
  nowSeconds: number,
): Promise<CheckResult[]> {
  const rule = (id: string, label: string, pass: boolean, detail: string): CheckResult => ({
    id,
    status: pass ? 'pass' : 'fail',
    label,
    detail,
  });
  const checks: CheckResult[] = [
    rule(
      'alg',
      'alg',
      header.alg === 'RS256',
      header.alg === 'RS256' ? 'RS256' : `is ${JSON.stringify(header.alg)}; must be RS256`,
    ),
    rule(
      'typ',
      'typ',
      header.typ === 'JWT',
      header.typ === 'JWT' ? 'JWT' : `is ${JSON.stringify(header.typ)}; must be JWT`,
    ),
  ];

  const claimProblems = [
    ...STRING_CLAIMS.filter((name) => typeof claims[name] !== 'string' || claims[name] === '').map(
      (name) => `${name} is not a non-empty string`,
    ),
    ...TIME_CLAIMS.filter((name) => !Number.isInteger(claims[name])).map(
      (name) => `${name} is not a NumericDate (whole epoch seconds)`,
    ),
  ];
  checks.push(
    rule(
      'claims',
      'claims',
      claimProblems.length === 0,
      claimProblems.length === 0
        ? 'all 7 present: jti iss sub aud are strings, iat nbf exp NumericDates'
        : claimProblems.join('; '),
    ),
  );

  const { certificate, thumbprintAlgorithm } = config.credentials;
  const expectedIss = certificate
    ? certificateThumbprint(certificate, thumbprintAlgorithm)
    : normalizeThumbprint(options.thumbprint ?? '');
  const issSource = certificate
    ? `the certificate's ${thumbprintAlgorithm} thumbprint`
    : 'PLATFORM_CERT_THUMBPRINT (no certificate is configured to compute it from)';
  checks.push(
    rule(
      'iss',
      'iss',
      claims.iss === expectedIss,
      claims.iss === expectedIss ? `is ${issSource}` : `is not ${issSource} ${expectedIss}`,
    ),
    rule(
      'sub',
      'sub',
      claims.sub === config.machineId,
      claims.sub === config.machineId
        ? 'is the machineId (PLATFORM_MACHINE_ID)'
        : `is not the machineId ${config.machineId}`,
    ),
  );
  const audSource = options.audience !== undefined ? 'PLATFORM_AUDIENCE' : 'default: the host of PLATFORM_BASE_URL';
  checks.push(
    rule(
      'aud',
      'aud',
      claims.aud === config.audience,
      claims.aud === config.audience
        ? `is the audience (${audSource})`
        : `is ${JSON.stringify(claims.aud)}; expected the single string ${JSON.stringify(config.audience)} (${audSource})`,
    ),
  );

  const { iat, nbf, exp } = claims;
  if (typeof iat === 'number' && typeof nbf === 'number' && typeof exp === 'number') {
    const max = MAX_ASSERTION_LIFETIME_SECONDS;
    checks.push(
      rule('lifetime', 'exp - iat', exp - iat <= max, `${exp - iat} s (at most ${max} s)`),
      rule('nbf-before-iat', 'iat - nbf', iat - nbf <= max, `${iat - nbf} s (at most ${max} s)`),
      rule(
        'time-window',
        'nbf <= now < exp',
        nbf <= nowSeconds && nowSeconds < exp,
        `now is ${isoSeconds(nowSeconds)}: ${nbf > nowSeconds ? 'before nbf' : nowSeconds >= exp ? 'at or after exp' : `valid for ${exp - nowSeconds} s more`}`,
      ),
    );
  } else {
    for (const [id, label] of [
      ['lifetime', 'exp - iat'],
      ['nbf-before-iat', 'iat - nbf'],
      ['time-window', 'nbf <= now < exp'],
    ]) {
      checks.push(rule(id, label, false, 'cannot be checked: iat, nbf and exp must be NumericDates'));
    }
  }
  checks.push(await checkSignature(jwt, config));
  return checks;
}

/** Verified with jose against the certificate's public key, not with anything the signer holds. */
async function checkSignature(jwt: string, config: ResolvedPlatformAuthConfig): Promise<CheckResult> {
  const { certificate, privateKey } = config.credentials;
  const key = certificate?.publicKey ?? createPublicKey(privateKey);
  let verified: boolean;
  try {
    await compactVerify(jwt, key, { algorithms: ['RS256'] });
    verified = true;
  } catch {
    verified = false;
  }
  if (!verified) {
    return {
      id: 'signature',
      label: 'signature',
      status: 'fail',
      detail: `does not verify against ${certificate ? 'the certificate' : 'the key'} (RS256)`,
    };
  }
  if (!certificate) {
    return {
      id: 'signature',
      label: 'signature',
      status: 'warn',
      detail:
        "verifies against the private key's public half; no certificate is configured to check the registered one",
      fix: 'configure the registered certificate (PLATFORM_CERTIFICATE_PATH) so that the pair is checked',
    };
  }
  return { id: 'signature', label: 'signature', status: 'pass', detail: 'verifies against the certificate (RS256)' };
}

function describeClaim(name: string, value: unknown, claims: JWTPayload): string {
  if (typeof value !== 'number' || !(TIME_CLAIMS as readonly string[]).includes(name)) return JSON.stringify(value);
  const relative = name === 'exp' && typeof claims.iat === 'number' ? ` (iat + ${value - claims.iat} s)` : '';
  return `${value}  ${isoSeconds(value)}${relative}`;
}

function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
