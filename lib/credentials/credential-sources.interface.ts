import type { PlatformAuthSigner } from '../options/key-source.interface.js';
import type { ThumbprintAlgorithm } from '../options/platform-auth-options.interface.js';

/**
 * Where one key pair comes from, as the loaders read it: a `KeySource` (`key` or `next`, whose passphrase is
 * `privateKeyPassphrase` here), with the integration's thumbprint settings. Problems are reported under these names;
 * `KeyPairReport` shows them as the pair's options.
 */
export interface CredentialSources {
  readonly privateKey?: string;
  readonly privateKeyPath?: string;
  readonly privateKeyPassphrase?: string;
  readonly privateKeyUri?: string;
  readonly signer?: PlatformAuthSigner;
  readonly certificate?: string;
  readonly certificatePath?: string;
  readonly thumbprint?: string;
  readonly thumbprintAlgorithm?: ThumbprintAlgorithm;
}
