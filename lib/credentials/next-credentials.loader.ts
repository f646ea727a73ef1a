import type { FlatPlatformAuthOptions } from '../options/flat-options.interface.js';
import { ConfigReport } from '../options/config.report.js';
import {
  loadCredentials,
  openCredentials,
  type CredentialSources,
  type LoadedCredentials,
} from './credentials.loader.js';
import type { PreReadFiles } from './credential-source.reader.js';

/** Each option of the current pair, and its counterpart for the next pair. */
const NEXT_NAMES = {
  privateKey: 'nextPrivateKey',
  privateKeyPath: 'nextPrivateKeyPath',
  privateKeyUri: 'nextPrivateKeyUri',
  signer: 'nextSigner',
  certificate: 'nextCertificate',
  certificatePath: 'nextCertificatePath',
} as const;

type NextOptions = Pick<FlatPlatformAuthOptions, (typeof NEXT_NAMES)[keyof typeof NEXT_NAMES]>;

/**
 * The next pair's sources in the current pair's names, so they go through the same loader and checks; `undefined`
 * when no `next*` option is set. The thumbprint algorithm is the integration's; the passphrase the next pair's own,
 * else the current pair's.
 */
export function nextCredentialSources(
  options: NextOptions &
    Pick<FlatPlatformAuthOptions, 'privateKeyPassphrase' | 'nextPrivateKeyPassphrase' | 'thumbprintAlgorithm'>,
): CredentialSources | undefined {
  const given = Object.values(NEXT_NAMES).some((name) => options[name] !== undefined);
  if (!given) return undefined;
  return {
    privateKey: options.nextPrivateKey,
    privateKeyPath: options.nextPrivateKeyPath,
    privateKeyUri: options.nextPrivateKeyUri,
    signer: options.nextSigner,
    certificate: options.nextCertificate,
    certificatePath: options.nextCertificatePath,
    privateKeyPassphrase: options.nextPrivateKeyPassphrase ?? options.privateKeyPassphrase,
    thumbprintAlgorithm: options.thumbprintAlgorithm,
  };
}

const NAME_IN_TEXT = /\b(privateKeyPath|privateKeyUri|privateKey|certificatePath|signer)\b/g;

/**
 * A report for the next pair: the loader reports on `privateKey`, `certificatePath`, …; this names the next pair's
 * options (`nextPrivateKey (PLATFORM_NEXT_PRIVATE_KEY)`) and forwards every problem and warning to `parent`.
 */
class NextPairReport extends ConfigReport {
  constructor(private readonly parent: ConfigReport) {
    super();
  }

  override problem(option: string, message: string): void {
    super.problem(option, message);
    this.parent.problem(nextName(option), nextText(message));
  }

  override warn(option: string, message: string): void {
    super.warn(option, message);
    this.parent.warn(nextName(option), nextText(message));
  }
}

function nextName(option: string): string {
  return (NEXT_NAMES as Record<string, string>)[option] ?? option;
}

function nextText(message: string): string {
  return message.replace(NAME_IN_TEXT, (name) => nextName(name));
}

/** The next pair must not be the current one: the switch would change nothing, and the rotation not happen. */
function checkDiffers(current: LoadedCredentials | undefined, next: LoadedCredentials, report: ConfigReport): void {
  if (current && current.thumbprint === next.thumbprint) {
    report.problem(
      next.certificate ? 'certificate' : 'privateKey',
      `is the current pair (thumbprint ${next.thumbprint}): the next pair must be a new key and certificate, made with keygen --next`,
    );
  }
}

/** Start-up's reading of the next pair, for every key source, as {@link openCredentials}; problems go to `parent`. */
export async function openNextCredentials(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  nowMs: number,
  parent: ConfigReport,
): Promise<LoadedCredentials | undefined> {
  const report = new NextPairReport(parent);
  const next = await openCredentials(sources, nowMs, report);
  if (next) checkDiffers(current, next, report);
  if (report.problems.length > 0) {
    await next?.key.close();
    return undefined;
  }
  return next;
}

/** The next pair from PEM sources, synchronously (start-up without a token or signer, and file reloads). */
export function loadNextCredentials(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  nowMs: number,
  parent: ConfigReport,
  files?: PreReadFiles,
): LoadedCredentials | undefined {
  const report = new NextPairReport(parent);
  const next = loadCredentials(sources, nowMs, report, files);
  if (next) checkDiffers(current, next, report);
  return report.problems.length > 0 ? undefined : next;
}
