import type { KeySource } from '../options/key-source.interface.js';
import type { ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';

/**
 * How the settings of one pair are named where a message cites them: the option path of each (`key.privateKeyPath`,
 * `next.certificate`), which the report completes with its variable. Built once from where the pair is configured.
 */
export interface PairNames {
  readonly privateKey: string;
  readonly privateKeyPath: string;
  readonly privateKeyUri: string;
  readonly signer: string;
  /** The option the passphrase in use comes from: the next pair's own, else the current pair's, which it defaults to. */
  readonly passphrase: string;
  readonly certificate: string;
  readonly certificatePath: string;
  /** The setting that can give the assertion's iss instead of a certificate, where there is one (`thumbprint`). */
  readonly thumbprint?: string;
}

/**
 * Where one key pair comes from, as the loaders read it: its `KeySource` (the passphrase the one in use), the
 * integration's thumbprint settings, and the names its problems are reported under.
 */
export interface CredentialSources extends Readonly<KeySource> {
  readonly names: PairNames;
  readonly thumbprint?: string;
  readonly thumbprintAlgorithm?: ThumbprintAlgorithm;
}
