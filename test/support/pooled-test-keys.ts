import { createPrivateKey, createPublicKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createSelfSignedCredentials as issue,
  type SelfSignedCredentials,
  type SelfSignedCredentialsOptions,
} from '../../lib/testing/self-signed-credentials.util.js';
import { packageRoot } from './built-package.js';

export type { SelfSignedCredentials, SelfSignedCredentialsOptions };

/**
 * What the emulator and `createTestCredentials` import in this suite instead of lib/testing's own module (the
 * `pooledTestKeys` plugin of vitest.config.ts swaps it in): the same certificates, for RSA-2048 keys taken from a
 * cache that outlives the run. Generating a key costs 60–150 ms of CPU and the suite makes one per emulated
 * integration, hundreds per run; issuing a certificate for a given key costs a signature.
 *
 * Keys are never handed out twice in one process, so two integrations of a test always have different keys. Each
 * worker slot has a folder of its own: processes that run at the same time never share a key either.
 */
const folder = join(packageRoot, 'node_modules/.cache/platform-auth-test-keys', process.env.VITEST_POOL_ID ?? 'main');
/** How many keys of each size this process has taken. */
const taken = new Map<number, number>();

export async function createSelfSignedCredentials(
  options: SelfSignedCredentialsOptions = {},
): Promise<SelfSignedCredentials> {
  // A caller that asks for a key size or brings its key tests that path: only the default key comes from the cache.
  if (options.privateKeyPem !== undefined || options.modulusLength !== undefined) return issue(options);
  return issue({ ...options, privateKeyPem: await nextKey() });
}

/**
 * An RSA key pair of its own for a test that signs beside its credentials (an authorization server's key, a forger's
 * key), from the same cache: a file read instead of a generation.
 */
export async function pooledRsaKeyPair(modulusLength = 2048): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  const privateKey = createPrivateKey(await nextKey(modulusLength));
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

async function nextKey(modulusLength = 2048): Promise<string> {
  const index = taken.get(modulusLength) ?? 0;
  taken.set(modulusLength, index + 1);
  // 2048-bit keys keep the names the cache has always had.
  const file = join(folder, modulusLength === 2048 ? `${index}.pem` : `rsa${modulusLength}-${index}.pem`);
  if (existsSync(file)) return readFileSync(file, 'utf8');
  const { privateKey } = await promisify(generateKeyPair)('rsa', {
    modulusLength,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  mkdirSync(folder, { recursive: true });
  // Written whole, then renamed: a run stopped half-way never leaves half a key for the next one.
  writeFileSync(`${file}.partial`, privateKey, { mode: 0o600 });
  renameSync(`${file}.partial`, file);
  return privateKey;
}
