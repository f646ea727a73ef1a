import { X509Certificate } from 'node:crypto';
import { issueSelfSignedCertificate } from '../../credentials/certificate.issuer.js';
import { Pkcs11SetupError } from '../../credentials/pkcs11/pkcs11.binding.js';
import { generateKeyInToken } from '../../credentials/pkcs11/pkcs11.keygen.js';
import { formatPkcs11Uri, parsePkcs11Uri, type Pkcs11Uri } from '../../credentials/pkcs11/pkcs11-uri.parser.js';
import { describeCertificate, validityText } from '../certificate-info.util.js';
import { CommandFailure, UsageError, type CommandContext } from '../cli.command.js';
import { printFields } from '../cli.output.js';
import { printNextSteps, rotationSteps, shellWord } from './rotation-steps.util.js';

/** Where the configuration's PIN file goes when the URI gave a PIN value (which is never printed). */
export const PIN_FILE_PLACEHOLDER = '/path/to/pin-file';
/** The key's URI, without any PIN attribute, beside the certificate: how the emulator finds the key to print. */
export const KEY_URI_FILE = 'private-key.uri';

/** `--key-uri`, parsed; its problems name attributes only, never the PIN. */
export function parseKeyUri(text: string): Pkcs11Uri {
  const parsed = parsePkcs11Uri(text);
  if (parsed.problems) throw new UsageError(`--key-uri ${parsed.problems.join('; ')}`);
  if (parsed.uri.object === undefined) throw new UsageError('--key-uri needs object=LABEL: the name of the new key');
  return parsed.uri;
}

interface TokenKeygenTarget {
  readonly certificatePath: string;
  /** Where the key's URI goes, without its PIN: {@link KEY_URI_FILE}, or next-… with --next. */
  readonly keyUriPath: string;
  readonly days: number;
  readonly commonName: string;
  writeNew(path: string, content: string, mode: number): void;
  /** keygen --next: the next pair for a rotation, configured as PLATFORM_NEXT_*. */
  readonly next?: boolean;
}

/**
 * keygen --key-uri: the RSA-2048 pair is generated inside the token (sensitive, never extractable), the token's key
 * signs its own self-signed certificate, and only that certificate is written. Then the portal steps.
 */
export async function keygenInToken(
  context: CommandContext,
  uri: Pkcs11Uri,
  target: TokenKeygenTarget,
): Promise<number> {
  let generated: Awaited<ReturnType<typeof generateKeyInToken>>;
  try {
    generated = await generateKeyInToken(uri);
  } catch (error) {
    if (error instanceof Pkcs11SetupError) throw new CommandFailure(`--key-uri: ${error.message}`);
    throw error;
  }
  const { key, label, id, attributes } = generated;
  let certificatePem: string;
  try {
    certificatePem = await issueSelfSignedCertificate(key, {
      commonName: target.commonName,
      days: target.days,
      nowMs: context.now(),
    });
  } finally {
    await key.close();
  }
  target.writeNew(target.certificatePath, certificatePem, 0o644);
  target.writeNew(target.keyUriPath, `${formatPkcs11Uri({ ...uri, pin: undefined }, id)}\n`, 0o644);

  const now = context.now();
  const info = describeCertificate(new X509Certificate(certificatePem), now);
  const pinGiven = uri.pin !== undefined && 'value' in uri.pin;
  const keyUri = formatPkcs11Uri(uri, id, PIN_FILE_PLACEHOLDER);
  const idHex = id.toString('hex');
  const nextSteps = target.next
    ? rotationSteps(target.certificatePath)
    : [
        'In the Administration Portal: select the organisation, then Distribution, then System integration, then Add System integration.',
        `Enter the name and contact information, upload ${target.certificatePath}, and choose the permissions ("Send message"; "Retrieve billing data" only if required).`,
        "Note the machineId the portal assigns (it becomes the assertion's sub) and check that it shows the thumbprint above.",
        `Configure the application (the private key stays in the token; install the pkcs11js package beside the module${pinGiven || !uri.pin ? `; put the PIN in a file readable by the application only and replace ${PIN_FILE_PLACEHOLDER}` : ''}):`,
      ];
  const env: Record<string, string> = target.next
    ? { PLATFORM_NEXT_PRIVATE_KEY_URI: keyUri, PLATFORM_NEXT_CERTIFICATE_PATH: target.certificatePath }
    : {
        PLATFORM_BASE_URL: 'https://{platform_domain}',
        PLATFORM_MACHINE_ID: '<machineId from the portal>',
        PLATFORM_PRIVATE_KEY_URI: keyUri,
        PLATFORM_CERTIFICATE_PATH: target.certificatePath,
      };

  const out = context.out;
  if (out.json) {
    out.printJson({
      ok: true,
      token: uri.token,
      object: label,
      id: idHex,
      keyAttributes: attributes,
      certificatePath: target.certificatePath,
      keyUriPath: target.keyUriPath,
      commonName: target.commonName,
      thumbprint: info.thumbprintSha1,
      thumbprintSha256: info.thumbprintSha256,
      notBefore: info.notBefore,
      notAfter: info.notAfter,
      days: target.days,
      nextSteps,
      env,
    });
    return 0;
  }
  out.print(
    `${out.style.ok('✓')} Generated an RSA 2048-bit key pair inside the token (object '${label}', id ${idHex}): CKA_TOKEN, CKA_SENSITIVE and never extractable; the private key cannot leave the token.`,
  );
  out.print(
    `${out.style.ok('✓')} Wrote ${target.certificatePath} (self-signed X.509 signed inside the token, PEM, ${info.subject}, ${validityText(info, now)}).`,
  );
  out.print(
    `${out.style.ok('✓')} Wrote ${target.keyUriPath} (the key's URI without any PIN: the emulator prints PLATFORM_PRIVATE_KEY_URI from it).`,
  );
  out.print();
  printFields(out, [
    ['Thumbprint (SHA-1)', `${out.style.bold(info.thumbprintSha1)}  the portal shows this; it is the assertion's iss`],
    ['Thumbprint (SHA-256)', info.thumbprintSha256],
  ]);
  out.print();
  printNextSteps(out, nextSteps, env, { next: target.next === true });
  out.print();
  out.print('Before the portal, try the key locally against the emulator (no code, nothing leaves this machine):');
  out.print(`  npx platform-auth emulator --certificate ${shellWord(target.certificatePath)}`);
  out.print();
  out.print(`Plan the rotation before ${info.notAfter}: the module warns 30 days ahead.`);
  return 0;
}
