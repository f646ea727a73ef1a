import type { ReadPlatformAuthOptions } from '../options/options.read.js';
import type { CredentialSources, PairNames } from './credential-sources.interface.js';

/** A key pair's group of options: the current pair (`key`) or the next one (`next`). */
type KeyPair = 'key' | 'next';

/**
 * The names of the settings of the pair in `group`. `passphraseFrom`: the group whose passphrase is in use (the next
 * pair's defaults to the current pair's); `thumbprint`: the setting that gives the iss without a certificate, if any.
 */
export function pairNames(
  group: KeyPair,
  { passphraseFrom = group, thumbprint }: { passphraseFrom?: KeyPair; thumbprint?: string } = {},
): PairNames {
  return {
    privateKey: `${group}.privateKey`,
    privateKeyPath: `${group}.privateKeyPath`,
    privateKeyUri: `${group}.privateKeyUri`,
    signer: `${group}.signer`,
    passphrase: `${passphraseFrom}.passphrase`,
    certificate: `${group}.certificate`,
    certificatePath: `${group}.certificatePath`,
    thumbprint,
  };
}

/**
 * The sources of one pair with their names, so both pairs go through the same loader and checks; `undefined` for the
 * next pair when none of its sources is set. The thumbprint is the current pair's; the thumbprint algorithm the
 * integration's; the next pair's passphrase its own, else the current pair's.
 */
export function pairSources(
  options: Pick<ReadPlatformAuthOptions, 'key' | 'next' | 'thumbprint' | 'thumbprintAlgorithm'>,
  group: KeyPair,
): CredentialSources | undefined {
  const source = options[group] ?? {};
  const { privateKey, privateKeyPath, privateKeyUri, signer, certificate, certificatePath } = source;
  const keySources = { privateKey, privateKeyPath, privateKeyUri, signer, certificate, certificatePath };
  if (group === 'next' && Object.values(keySources).every((value) => value === undefined)) return undefined;
  const inherited = group === 'next' && source.passphrase === undefined && options.key?.passphrase !== undefined;
  return {
    ...keySources,
    passphrase: inherited ? options.key?.passphrase : source.passphrase,
    names: pairNames(group, {
      passphraseFrom: inherited ? 'key' : group,
      thumbprint: group === 'key' ? 'thumbprint' : undefined,
    }),
    thumbprint: group === 'key' ? options.thumbprint : undefined,
    thumbprintAlgorithm: options.thumbprintAlgorithm,
  };
}
