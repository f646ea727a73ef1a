import { ConfigReport } from '../options/config.report.js';
import type { ReadPlatformAuthOptions } from '../options/options.read.js';
import type { CredentialSources } from './credentials.loader.js';

/** A key pair's group of options: the current pair (`key`) or the next one (`next`). */
type KeyPair = 'key' | 'next';

/** The loader's name of each source of a pair, and its option inside the pair's group. */
const PAIR_OPTIONS: Readonly<Record<string, string>> = {
  privateKey: 'privateKey',
  privateKeyPath: 'privateKeyPath',
  privateKeyUri: 'privateKeyUri',
  signer: 'signer',
  privateKeyPassphrase: 'passphrase',
  certificate: 'certificate',
  certificatePath: 'certificatePath',
};

/**
 * The loader's names where a message cites them; `certificate` only beside `certificatePath` and `signer` not after
 * `the` or `a`, as the words are prose there.
 */
const NAME_IN_TEXT =
  /\b(privateKeyPassphrase|privateKeyPath|privateKeyUri|privateKey|certificatePath|(?<!the |a )signer|certificate(?=(?: or |\/)certificatePath))\b/g;

/**
 * The sources of one pair in the loader's names, so both pairs go through the same loader and checks; `undefined` for
 * the next pair when none of its sources is set. The thumbprint is the current pair's; the thumbprint algorithm the
 * integration's; the next pair's passphrase its own, else the current pair's.
 */
export function pairSources(
  options: Pick<ReadPlatformAuthOptions, 'key' | 'next' | 'thumbprint' | 'thumbprintAlgorithm'>,
  pair: KeyPair,
): CredentialSources | undefined {
  const source = options[pair] ?? {};
  const { privateKey, privateKeyPath, privateKeyUri, signer, certificate, certificatePath } = source;
  const keySources = { privateKey, privateKeyPath, privateKeyUri, signer, certificate, certificatePath };
  if (pair === 'next' && Object.values(keySources).every((value) => value === undefined)) return undefined;
  return {
    ...keySources,
    privateKeyPassphrase: pair === 'next' ? (source.passphrase ?? options.key?.passphrase) : source.passphrase,
    thumbprint: pair === 'key' ? options.thumbprint : undefined,
    thumbprintAlgorithm: options.thumbprintAlgorithm,
  };
}

/**
 * A report for one pair: the loader reports on `privateKey`, `certificatePath`, …; this names the pair's options
 * (`next.privateKey (PLATFORM_NEXT_PRIVATE_KEY)`), in the setting and in the message, and forwards every problem and
 * warning to `parent`. The integration's settings (`thumbprint`) keep their names.
 */
export class KeyPairReport extends ConfigReport {
  constructor(
    private readonly parent: ConfigReport,
    private readonly pair: KeyPair,
  ) {
    super();
  }

  override problem(option: string, message: string): void {
    super.problem(option, message);
    this.parent.problem(this.optionName(option), this.text(message));
  }

  override warn(option: string, message: string): void {
    super.warn(option, message);
    this.parent.warn(this.optionName(option), this.text(message));
  }

  private optionName(option: string): string {
    return Object.hasOwn(PAIR_OPTIONS, option) ? `${this.pair}.${PAIR_OPTIONS[option]}` : option;
  }

  private text(message: string): string {
    return message.replace(NAME_IN_TEXT, (name) => this.optionName(name));
  }
}
