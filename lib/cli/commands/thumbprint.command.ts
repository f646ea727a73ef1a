import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CERTIFICATE_EXPIRY_WARNING_DAYS } from '../../options/options.constants.js';
import { describeCertificate, parseCertificateFile, validityText } from '../certificate-info.util.js';
import { CommandFailure, describeFsError, type Command, type CommandContext } from '../cli.command.js';
import { printFields } from '../cli.output.js';

export const thumbprintCommand: Command = {
  name: 'thumbprint',
  synopsis: 'CERT',
  description: [
    "Shows the thumbprints of a certificate file: SHA-1 in the portal's form (40 uppercase hex characters, the",
    "assertion's iss) and SHA-256, with the subject, the validity dates and the days left until expiry.",
    'Reads PEM (what the portal and the module take) and DER.',
  ].join('\n'),
  options: {},
  positionals: ['CERT'],
  run,
};

async function run(context: CommandContext): Promise<number> {
  const [argument] = context.positionals as [string];
  const path = resolve(context.cwd, argument);
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new CommandFailure(`cannot read certificate file '${argument}': ${describeFsError(error)}`);
  }
  const { certificate, encoding } = parseCertificateFile(content, `'${argument}'`);
  const now = context.now();
  const info = describeCertificate(certificate, now);

  const out = context.out;
  if (encoding === 'DER') {
    out.note(
      `note: the portal and the module take PEM; convert with: openssl x509 -inform der -in ${argument} -out publickey.cer`,
    );
  }
  if (out.json) {
    out.printJson({ path, encoding, ...info });
    return 0;
  }
  const validity = validityText(info, now);
  const status =
    info.state !== 'valid'
      ? out.style.fail(validity)
      : info.daysToExpiry < CERTIFICATE_EXPIRY_WARNING_DAYS
        ? out.style.warn(`${validity}; plan the rotation now`)
        : out.style.ok(validity);
  const key = `${info.publicKey.type.toUpperCase()}${info.publicKey.bits ? ` ${info.publicKey.bits}-bit` : ''}`;
  printFields(out, [
    ['Certificate', `${path} (${encoding})`],
    ['Subject', info.subject],
    ['Issuer', info.selfSigned ? `${info.issuer} (self-signed)` : info.issuer],
    ['Public key', key],
    ['SHA-1', `${out.style.bold(info.thumbprintSha1)}  portal form, the assertion's iss`],
    ['SHA-256', info.thumbprintSha256],
    ['Valid from', info.notBefore],
    ['Valid until', info.notAfter],
    ['Status', status],
  ]);
  return 0;
}
