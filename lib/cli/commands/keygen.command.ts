import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createSelfSignedCredentials } from '../../testing/self-signed-credentials.util.js';
import { describeCertificate, validityText } from '../certificate-info.util.js';
import {
  CommandFailure,
  UsageError,
  describeFsError,
  integerOption,
  stringOption,
  type Command,
  type CommandContext,
} from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { KEY_URI_FILE, keygenInToken, parseKeyUri } from './keygen-token.util.js';
import { printNextSteps, rotationSteps, shellWord } from './rotation-steps.util.js';

const PRIVATE_KEY_FILE = 'private-key.pem';
const CERTIFICATE_FILE = 'publickey.cer';
/** With --next: the next pair, beside the current one. */
const NEXT_PRIVATE_KEY_FILE = 'next-private-key.pem';
const NEXT_CERTIFICATE_FILE = 'next-publickey.cer';
const DEFAULT_COMMON_NAME = 'platform system integration';
/** X.520 upper bound for a common name. */
const MAX_COMMON_NAME_LENGTH = 64;

export const keygenCommand: Command = {
  name: 'keygen',
  synopsis: '[--out DIR] [--days N] [--name CN] [--key-uri URI] [--next]',
  description: [
    'Generates the key pair of docs/platform-contract.md#keys-and-certificates: an RSA-2048 private key',
    `(PKCS#8 PEM, ${PRIVATE_KEY_FILE}, file mode 0600) and a self-signed X.509 certificate for it (PEM,`,
    `${CERTIFICATE_FILE}) to upload in the Administration Portal.`,
    'With --key-uri the pair is generated inside the PKCS#11 token instead (sensitive, never extractable); no key file',
    `is written: ${CERTIFICATE_FILE}, signed by the token's key (docs/key-custody.md), and ${KEY_URI_FILE} beside it,`,
    "the key's URI without any PIN, from which the emulator prints PLATFORM_PRIVATE_KEY_URI.",
    'Existing files are never overwritten. Prints the certificate thumbprint and the steps that follow in the portal.',
    `With --next it prepares the next pair for a rotation, beside the current one (${NEXT_PRIVATE_KEY_FILE},`,
    `${NEXT_CERTIFICATE_FILE}), and prints the rotation runbook's steps and the PLATFORM_NEXT_* variables.`,
  ].join('\n'),
  options: {
    next: {
      type: 'boolean',
      description: `the next pair for a rotation: ${NEXT_PRIVATE_KEY_FILE} and ${NEXT_CERTIFICATE_FILE}, configured as PLATFORM_NEXT_*`,
    },
    'key-uri': {
      type: 'string',
      placeholder: 'URI',
      description:
        'generate the key inside a PKCS#11 token: pkcs11:token=LABEL;object=NAME?module-path=LIB&pin-source=file:PIN_FILE (the PIN is never printed)',
    },
    out: {
      type: 'string',
      placeholder: 'DIR',
      description: 'directory for the two files (created if missing); default: the current directory',
    },
    days: {
      type: 'string',
      placeholder: 'N',
      description: "certificate validity in days, 1 to 3650; default 365, the platform's standard setting",
    },
    name: {
      type: 'string',
      placeholder: 'CN',
      description: `certificate subject common name; default '${DEFAULT_COMMON_NAME}'`,
    },
  },
  run,
};

async function run(context: CommandContext): Promise<number> {
  const days = integerOption(context, 'days', { min: 1, max: 3650, fallback: 365 });
  const commonName = commonNameOption(context);
  const dir = resolve(context.cwd, stringOption(context, 'out') ?? '.');
  const next = context.options.next === true;
  const keyPath = join(dir, next ? NEXT_PRIVATE_KEY_FILE : PRIVATE_KEY_FILE);
  const certificatePath = join(dir, next ? NEXT_CERTIFICATE_FILE : CERTIFICATE_FILE);
  const keyUriPath = join(dir, next ? `next-${KEY_URI_FILE}` : KEY_URI_FILE);
  const keyUri = stringOption(context, 'key-uri');
  const inToken = keyUri === undefined ? undefined : parseKeyUri(keyUri);

  if (existsSync(dir) && !statSync(dir).isDirectory())
    throw new CommandFailure(`--out '${dir}' is a file, not a directory`);
  const existing = (inToken ? [certificatePath, keyUriPath] : [keyPath, certificatePath]).filter((path) =>
    existsSync(path),
  );
  if (existing.length > 0) {
    throw new CommandFailure(
      `refusing to overwrite ${existing.join(' and ')}: a key that is registered would be lost; move ${existing.length === 1 ? 'it' : 'them'} away or choose another --out`,
    );
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new CommandFailure(`cannot create directory '${dir}': ${describeFsError(error)}`);
  }

  if (inToken)
    return keygenInToken(context, inToken, { certificatePath, keyUriPath, days, commonName, writeNew, next });

  // In-memory generation with the module's own helper (WebCrypto key, @peculiar/x509 certificate): the same code
  // path the emulator and the tests use, so what keygen writes is exactly what the module is tested against.
  const credentials = await createSelfSignedCredentials({ days, commonName });
  writeNew(keyPath, credentials.privateKeyPem, 0o600);
  try {
    writeNew(certificatePath, credentials.certificatePem, 0o644);
  } catch (error) {
    unlinkSync(keyPath);
    throw error;
  }

  const now = context.now();
  const info = describeCertificate(new X509Certificate(credentials.certificatePem), now);
  const nextSteps = next
    ? rotationSteps(certificatePath)
    : [
        'In the Administration Portal: select the organisation, then Distribution, then System integration, then Add System integration.',
        `Enter the name and contact information, upload ${certificatePath}, and choose the permissions ("Send message"; "Retrieve billing data" only if required).`,
        "Note the machineId the portal assigns (it becomes the assertion's sub) and check that it shows the thumbprint above.",
        'Configure the application (the private key stays on its machine; never commit or upload it):',
      ];
  const tryLocally = `npx platform-auth emulator --certificate ${shellWord(certificatePath)}`;
  const env: Record<string, string> = next
    ? { PLATFORM_NEXT_PRIVATE_KEY_PATH: keyPath, PLATFORM_NEXT_CERTIFICATE_PATH: certificatePath }
    : {
        PLATFORM_BASE_URL: 'https://{platform_domain}',
        PLATFORM_MACHINE_ID: '<machineId from the portal>',
        PLATFORM_PRIVATE_KEY_PATH: keyPath,
        PLATFORM_CERTIFICATE_PATH: certificatePath,
      };

  const out = context.out;
  if (out.json) {
    out.printJson({
      ok: true,
      privateKeyPath: keyPath,
      certificatePath,
      commonName,
      thumbprint: info.thumbprintSha1,
      thumbprintSha256: info.thumbprintSha256,
      notBefore: info.notBefore,
      notAfter: info.notAfter,
      days,
      next,
      nextSteps,
      env,
      tryLocally,
    });
    return 0;
  }
  out.print(
    `${out.style.ok('✓')} Wrote ${keyPath} (RSA 2048-bit, PKCS#8 PEM, mode 0600). Keep it secret: never commit, share or upload it.`,
  );
  out.print(
    `${out.style.ok('✓')} Wrote ${certificatePath} (self-signed X.509, PEM, ${info.subject}, ${validityText(info, now)}).`,
  );
  out.print();
  printFields(out, [
    ['Thumbprint (SHA-1)', `${out.style.bold(info.thumbprintSha1)}  the portal shows this; it is the assertion's iss`],
    ['Thumbprint (SHA-256)', info.thumbprintSha256],
  ]);
  out.print();
  printNextSteps(out, nextSteps, env, {
    next,
    checkNote: next ? ' (it checks both pairs and says which one the platform accepts)' : '',
  });
  out.print();
  out.print('Before the portal, try the pair locally against the emulator (no code, nothing leaves this machine):');
  out.print(`  ${tryLocally}`);
  out.print();
  out.print(`Plan the rotation before ${info.notAfter}: the module warns 30 days ahead.`);
  return 0;
}

function commonNameOption(context: CommandContext): string {
  const name = stringOption(context, 'name') ?? DEFAULT_COMMON_NAME;
  if (name.trim() === '' || name.length > MAX_COMMON_NAME_LENGTH) {
    throw new UsageError(`--name must be 1 to ${MAX_COMMON_NAME_LENGTH} characters, got ${name.length}`);
  }
  // These characters have a meaning in a distinguished name ("CN=a,O=b") and would change the subject.
  // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
  if (/[,+="\\<>;#\u0000-\u001f\u007f]/.test(name)) {
    throw new UsageError(
      `--name must not contain , + = " \\ < > ; # or control characters, got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/** Creates the file, failing if it appeared since the check: never replaces a key. */
function writeNew(path: string, content: string, mode: number): void {
  try {
    writeFileSync(path, content, { mode, flag: 'wx' });
  } catch (error) {
    throw new CommandFailure(`cannot write ${path}: ${describeFsError(error)}`);
  }
}
