import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import type { TestCertificates } from 'nestjs-platform-auth/testing';

/**
 * Tenant `t<index>` is the emulator's integration `machine-<index>`, signing with the one test key and the index-th
 * certificate; every tenant shares the platform URL. `undefined` (an unknown tenant) for any other id.
 */
export function emulatedTenant(
  platformUrl: string,
  certificates: TestCertificates,
  tenantId: string,
): PlatformAuthOptions | undefined {
  const index = Number(/^t(\d+)$/.exec(tenantId)?.[1] ?? Number.NaN);
  if (!(index >= 0 && index < certificates.certificatePems.length)) return undefined;
  return {
    baseUrl: platformUrl,
    machineId: `machine-${index}`,
    key: { privateKey: certificates.privateKeyPem, certificate: certificates.certificatePems[index] },
  };
}
