import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createSelfSignedCredentials as issue,
  type SelfSignedCredentials,
  type SelfSignedCredentialsOptions,
} from '../../lib/testing/self-signed-credentials.util.js';
import { certificateThumbprint } from '../../lib/credentials/thumbprint.util.js';
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
 *
 * The certificate for a cached key is encoded here, byte for byte the one lib/testing's @peculiar/x509 builds (its
 * test: test/unit/pooled-test-keys.test.ts), for a quarter of the CPU: the suite issues one per emulated integration.
 */
const folder = join(packageRoot, 'node_modules/.cache/platform-auth-test-keys', process.env.VITEST_POOL_ID ?? 'main');
/** How many keys of each size this process has taken. */
const taken = new Map<number, number>();

export async function createSelfSignedCredentials(
  options: SelfSignedCredentialsOptions = {},
): Promise<SelfSignedCredentials> {
  // A caller that asks for a key size or brings its key tests that path: only the default key comes from the cache.
  if (options.privateKeyPem !== undefined || options.modulusLength !== undefined) return issue(options);
  const commonName = options.commonName ?? 'nestjs-platform-auth integration';
  const notBefore = options.notBefore ?? new Date((options.now ?? Date.now()) - 60_000);
  const notAfter = options.notAfter ?? new Date(notBefore.getTime() + (options.days ?? 365) * 24 * 60 * 60 * 1000);
  const privateKeyPem = await nextKey();
  // What this encoder does not spell as @peculiar/x509 would is left to it.
  if (!PRINTABLE.test(commonName) || ![notBefore, notAfter].every(encodable))
    return issue({ ...options, privateKeyPem });
  const der = certificateDer(createPrivateKey(privateKeyPem), commonName, notBefore, notAfter, randomBytes(16));
  return {
    privateKeyPem,
    certificatePem: toPem(der),
    thumbprint: certificateThumbprint(new Uint8Array(der), options.thumbprintAlgorithm ?? 'sha1'),
  };
}

/**
 * The DER of the certificate lib/testing's `createSelfSignedCredentials` issues: X.509 v3, serial `07` and 16 random
 * bytes, subject and issuer one PrintableString CN, validity to the second, a critical basic-constraints extension
 * saying "not a CA", signed with sha256WithRSAEncryption by the key itself.
 */
export function certificateDer(
  privateKey: KeyObject,
  commonName: string,
  notBefore: Date,
  notAfter: Date,
  serial: Buffer,
): Buffer {
  const name = der(0x30, der(0x31, der(0x30, COMMON_NAME, der(0x13, Buffer.from(commonName, 'latin1')))));
  const tbs = der(
    0x30,
    V3,
    der(0x02, Buffer.from([0x07]), serial),
    SHA256_WITH_RSA,
    name,
    der(0x30, time(notBefore), time(notAfter)),
    name,
    createPublicKey(privateKey).export({ type: 'spki', format: 'der' }),
    NOT_A_CA,
  );
  return der(0x30, tbs, SHA256_WITH_RSA, der(0x03, Buffer.from([0]), sign('sha256', tbs, privateKey)));
}

/** A DER element: tag, definite length, contents. */
function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const length =
    body.length < 0x80
      ? [body.length]
      : body.length < 0x100
        ? [0x81, body.length]
        : [0x82, body.length >> 8, body.length & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const hex = (text: string) => Buffer.from(text.replace(/ /g, ''), 'hex');
const V3 = hex('a0 03 02 01 02');
const SHA256_WITH_RSA = hex('30 0d 06 09 2a 86 48 86 f7 0d 01 01 0b 05 00');
const COMMON_NAME = hex('06 03 55 04 03');
/** Extensions [3]: basicConstraints (2.5.29.19), critical, an empty sequence (cA defaults to false). */
const NOT_A_CA = hex('a3 10 30 0e 30 0c 06 03 55 1d 13 01 01 ff 04 02 30 00');
/**
 * PrintableString's alphabet (X.680), a name outside it being a UTF8String, less the ',', '+' and '=' that
 * @peculiar/x509 reads in `CN=…` as the start of another attribute; no space at either end, which a parser may trim.
 */
const PRINTABLE = /^(?! )[A-Za-z0-9 '()\-./:?]{1,64}(?<! )$/;

/** UTCTime up to 2049, GeneralizedTime after (RFC 5280, 4.1.2.5), whole seconds. */
function time(date: Date): Buffer {
  const digits = date
    .toISOString()
    .replace(/\.\d{3}/, '')
    .replace(/[-:T]/g, '');
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(digits.slice(2))) : der(0x18, Buffer.from(digits));
}

const encodable = (date: Date) => date.getUTCFullYear() >= 1950 && date.getUTCFullYear() <= 9999;

function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g)!;
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----`;
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
