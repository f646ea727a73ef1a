import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCertificates } from 'nestjs-platform-auth/testing';

const generateRsa = promisify(generateKeyPair);

/** Key pairs for many tenants: `keys` distinct RSA keys, each with the certificates of the tenants that use it. */
export interface TenantKeys {
  readonly privateKeyPems: readonly string[];
  /** By tenant index. */
  readonly certificatePems: readonly string[];
}

/**
 * Tenant `i` signs with key `i % keys` and a certificate of its own: with `keys` at least the registry's
 * `maxResident`, tenants resident together (consecutive indexes) never share a key. Keys are generated on libuv's
 * thread pool, `inFlight` at a time; a distinct key for each of 10,000 tenants would take the bench many minutes.
 */
export async function makeTenantKeys(tenants: number, keys: number, inFlight = 4): Promise<TenantKeys> {
  const privateKeyPems = new Array<string>(keys);
  const byKey = new Array<string[]>(keys);
  const perKey = Math.ceil(tenants / keys);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < keys) {
      const index = next++;
      const { privateKey } = await generateRsa('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      privateKeyPems[index] = privateKey;
      byKey[index] = (await createTestCertificates(perKey, { privateKeyPem: privateKey })).certificatePems;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const certificatePems = Array.from({ length: tenants }, (_, i) => byKey[i % keys][Math.floor(i / keys)]);
  return { privateKeyPems, certificatePems };
}

/** Tenant `t<i>`'s settings: the emulator's integration `machine-<i>`, with its key and certificate. */
export function tenantSettings(platformUrl: string, keys: TenantKeys, index: number): PlatformAuthOptions {
  return {
    baseUrl: platformUrl,
    machineId: `machine-${index}`,
    key: {
      privateKey: keys.privateKeyPems[index % keys.privateKeyPems.length],
      certificate: keys.certificatePems[index],
    },
  };
}

/** What the emulator registers for the same tenants. */
export function tenantIntegrations(keys: TenantKeys): { certificatePem: string; machineId: string }[] {
  return keys.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` }));
}
